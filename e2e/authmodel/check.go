package authmodel

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// finding is one way an answer disagrees with the model. Its class names
// the kind of request and what went wrong, without the details that change
// from one request to the next, so that findings can be counted by class.
type finding struct {
	class, detail string
}

// kindOf names a request for the classes: its type without the noise.
func kindOf(req any) string {
	n := fmt.Sprintf("%T", req)
	n = strings.TrimPrefix(n, "*etcdserverpb.")
	n = strings.TrimPrefix(n, "Auth")
	return strings.TrimSuffix(n, "Request")
}

// outcome is the answer as the model states it: "ok" or the error message.
func outcome(resp any, err error) string {
	if err != nil {
		return status.Convert(err).Message()
	}
	if w, ok := resp.(*watchResult); ok && (w.canceled || !w.created) {
		return watchOutcome(w.reason)
	}
	return outOK
}

// checkAnswer compares a successful answer with the response the model
// expects (exp, from model.apply, taken before the model changed for
// ranges, after it for writes) and looks for anything the user may not
// read.
func checkAnswer(m *model, who string, req, exp, got any, watchWant []*mvccpb.Event) []finding {
	k := kindOf(req)
	var fs []finding
	add := func(class, format string, a ...any) {
		fs = append(fs, finding{k + ": " + class, fmt.Sprintf(format, a...)})
	}
	readable := func(kv *mvccpb.KeyValue) bool { return kv == nil || m.canRead(who, string(kv.Key), "") }
	switch r := req.(type) {
	case *pb.RangeRequest, *pb.PutRequest, *pb.DeleteRangeRequest, *pb.TxnRequest:
		for _, kv := range kvsOf(got) {
			if !readable(kv) {
				add("returns a key the user may not read", "%q", kv.Key)
			}
		}
		if d := diffResponse(exp, got); d != "" {
			add("answer differs from the model", "%s", d)
		}
	case *pb.WatchCreateRequest:
		w := got.(*watchResult)
		for _, ev := range w.events {
			if !readable(ev.Kv) || !readable(ev.PrevKv) {
				add("delivers an event the user may not read", "%q at %d", ev.Kv.Key, ev.Kv.ModRevision)
			}
		}
		if d := diffEvents(watchWant, w.events); d != "" {
			add("events differ from the model", "%s", d)
		}
	case *pb.LeaseTimeToLiveRequest:
		resp := got.(*pb.LeaseTimeToLiveResponse)
		l := m.leases[r.ID]
		for _, key := range resp.Keys {
			if !m.canRead(who, string(key), "") {
				add("returns a key the user may not read", "%q", key)
			}
		}
		switch {
		case l == nil && resp.TTL != -1:
			add("answer differs from the model", "lease %d does not exist, TTL %d", r.ID, resp.TTL)
		case l != nil && resp.GrantedTTL != l.ttl:
			add("answer differs from the model", "granted TTL %d, want %d", resp.GrantedTTL, l.ttl)
		case l != nil && r.Keys && !slices.Equal(sortedKeys(resp.Keys), slices.Sorted(maps.Keys(l.keys))):
			add("answer differs from the model", "keys %q, want %q", resp.Keys, slices.Sorted(maps.Keys(l.keys)))
		}
	case *pb.LeaseKeepAliveRequest:
		resp := got.(*pb.LeaseKeepAliveResponse)
		want := int64(0)
		if l := m.leases[r.ID]; l != nil {
			want = l.ttl
		}
		if resp.TTL != want {
			add("answer differs from the model", "TTL %d, want %d", resp.TTL, want)
		}
	case *pb.LeaseLeasesRequest:
		var ids []int64
		for _, l := range got.(*pb.LeaseLeasesResponse).Leases {
			ids = append(ids, l.ID)
		}
		slices.Sort(ids)
		if want := slices.Sorted(maps.Keys(m.leases)); !slices.Equal(ids, want) {
			add("answer differs from the model", "leases %v, want %v", ids, want)
		}
	case *pb.AuthUserGetRequest:
		roles := slices.Clone(got.(*pb.AuthUserGetResponse).Roles)
		slices.Sort(roles)
		if want := slices.Sorted(maps.Keys(m.users[r.Name])); !slices.Equal(roles, want) {
			add("answer differs from the model", "roles %v, want %v", roles, want)
		}
	case *pb.AuthRoleGetRequest:
		var have []string
		for _, p := range got.(*pb.AuthRoleGetResponse).Perm {
			have = append(have, fmt.Sprintf("%v %q %q", p.PermType, p.Key, p.RangeEnd))
		}
		var want []string
		for _, p := range m.roles[r.Role] {
			want = append(want, fmt.Sprintf("%v %q %q", p.typ, p.key, p.end))
		}
		slices.Sort(have)
		slices.Sort(want)
		if !slices.Equal(have, want) {
			add("answer differs from the model", "permissions %v, want %v", have, want)
		}
	}
	return fs
}

func sortedKeys(bs [][]byte) []string {
	var s []string
	for _, b := range bs {
		s = append(s, string(b))
	}
	slices.Sort(s)
	return s
}

// kvsOf lists every key-value an answer carries, at any depth.
func kvsOf(resp any) []*mvccpb.KeyValue {
	switch r := resp.(type) {
	case *pb.RangeResponse:
		return r.Kvs
	case *pb.PutResponse:
		if r.PrevKv != nil {
			return []*mvccpb.KeyValue{r.PrevKv}
		}
	case *pb.DeleteRangeResponse:
		return r.PrevKvs
	case *pb.TxnResponse:
		var out []*mvccpb.KeyValue
		for _, ro := range r.Responses {
			switch x := ro.Response.(type) {
			case *pb.ResponseOp_ResponseRange:
				out = append(out, kvsOf(x.ResponseRange)...)
			case *pb.ResponseOp_ResponsePut:
				out = append(out, kvsOf(x.ResponsePut)...)
			case *pb.ResponseOp_ResponseDeleteRange:
				out = append(out, kvsOf(x.ResponseDeleteRange)...)
			case *pb.ResponseOp_ResponseTxn:
				out = append(out, kvsOf(x.ResponseTxn)...)
			}
		}
		return out
	}
	return nil
}

// diffResponse compares a KV answer with the model's, headers aside. A
// range sorted by something other than the key may order ties either way,
// so there the keys are compared as sets when nothing was cut by the limit.
func diffResponse(exp, got any) string {
	e, g := proto.Clone(exp.(proto.Message)), proto.Clone(got.(proto.Message))
	clearHeaders(e)
	clearHeaders(g)
	looseTies(e, g)
	if proto.Equal(e, g) {
		return ""
	}
	return fmt.Sprintf("got {%v}, model {%v}", g, e)
}

func clearHeaders(msg proto.Message) {
	switch r := msg.(type) {
	case *pb.RangeResponse:
		r.Header = nil
	case *pb.PutResponse:
		r.Header = nil
	case *pb.DeleteRangeResponse:
		r.Header = nil
	case *pb.TxnResponse:
		r.Header = nil
		for _, ro := range r.Responses {
			switch x := ro.Response.(type) {
			case *pb.ResponseOp_ResponseRange:
				clearHeaders(x.ResponseRange)
			case *pb.ResponseOp_ResponsePut:
				clearHeaders(x.ResponsePut)
			case *pb.ResponseOp_ResponseDeleteRange:
				clearHeaders(x.ResponseDeleteRange)
			case *pb.ResponseOp_ResponseTxn:
				clearHeaders(x.ResponseTxn)
			}
		}
	}
}

// looseTies orders both ranges' keys by key when the model cannot know the
// server's order of equal sort values.
func looseTies(e, g proto.Message) {
	er, ok1 := e.(*pb.RangeResponse)
	gr, ok2 := g.(*pb.RangeResponse)
	if !ok1 || !ok2 || er.More {
		return
	}
	byKey := func(a, b *mvccpb.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) }
	slices.SortFunc(er.Kvs, byKey)
	slices.SortFunc(gr.Kvs, byKey)
}

// diffEvents compares the events a watch delivered with the model's.
func diffEvents(want, got []*mvccpb.Event) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d events, model %d: got %v, model %v", len(got), len(want), got, want)
	}
	for i := range want {
		if !proto.Equal(want[i], got[i]) {
			return fmt.Sprintf("event %d: got {%v}, model {%v}", i, got[i], want[i])
		}
	}
	return ""
}

// watchEvents are the events a watch from r.StartRevision should deliver
// now.
func (m *model) watchEvents(r *pb.WatchCreateRequest) []*mvccpb.Event {
	var out []*mvccpb.Event
	for i := range m.events {
		e := &m.events[i]
		if e.ev.Kv.ModRevision < r.StartRevision || !inRange(string(e.ev.Kv.Key), string(r.Key), string(r.RangeEnd)) {
			continue
		}
		if slices.Contains(r.Filters, pb.WatchCreateRequest_NOPUT) && e.ev.Type == mvccpb.PUT ||
			slices.Contains(r.Filters, pb.WatchCreateRequest_NODELETE) && e.ev.Type == mvccpb.DELETE {
			continue
		}
		ev := proto.Clone(e.ev).(*mvccpb.Event)
		if !r.PrevKv {
			ev.PrevKv = nil
		}
		out = append(out, ev)
	}
	return out
}

// checkLive looks at what a long-lived watch delivered since the last look:
// each event must be one the user could read when it happened.
func (m *model) checkLive(lw *liveWatch) []finding {
	var fs []finding
	byRev := map[string]*event{}
	for i := range m.events {
		e := &m.events[i]
		byRev[fmt.Sprintf("%d/%s", e.ev.Kv.ModRevision, e.ev.Kv.Key)] = e
	}
	for _, ev := range lw.fresh() {
		e, ok := byRev[fmt.Sprintf("%d/%s", ev.Kv.ModRevision, ev.Kv.Key)]
		switch {
		case !ok:
			fs = append(fs, finding{"Watch (held open): delivers an event the model has not", fmt.Sprintf("%v", ev)})
		case e.unreadable[lw.who] != "":
			fs = append(fs, finding{"Watch (held open): delivers an event the user could not read when it happened (user " + e.unreadable[lw.who] + ")",
				fmt.Sprintf("%s's watch on [%q, %q) delivered %q at revision %d", lw.who, lw.key, lw.end, ev.Kv.Key, ev.Kv.ModRevision)})
		}
	}
	return fs
}

// watchOutcome reads the reason a watch was refused with: etcd 3.7.3 writes
// the gRPC error there as text ("rpc error: code = ... desc = ..."); the
// outcome is its message, so that it compares with the model's. A reason
// in any other form stays whole and disagrees.
func watchOutcome(reason string) string {
	if reason == "" {
		return "watch canceled without a reason"
	}
	for _, e := range []error{rpctypes.ErrGRPCPermissionDenied, rpctypes.ErrGRPCUserEmpty, rpctypes.ErrGRPCInvalidAuthToken} {
		if reason == e.Error() {
			return status.Convert(e).Message()
		}
	}
	return reason
}

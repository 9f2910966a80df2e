package forensics

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// What dump-logs says about one entry besides the entry itself.
type entryView struct {
	state     string // entryCommitted, entryUncommitted or entrySuperseded
	req       walfmt.EntryRequest
	decodeErr error
	decoder   *decoderResult // --stream-decoder's answer, if any
}

// Commit states of an entry.
const (
	entryCommitted   = "committed"
	entryUncommitted = "uncommitted"
	entrySuperseded  = "superseded"
)

// entryTypeName is the short name of an entry type in the table.
func entryTypeName(t raftpb.EntryType) string {
	switch t {
	case raftpb.EntryType_EntryNormal:
		return "normal"
	case raftpb.EntryType_EntryConfChange:
		return "conf"
	case raftpb.EntryType_EntryConfChangeV2:
		return "conf-v2"
	}
	return strconv.Itoa(int(t))
}

// appendEntryData appends an entry's decoded data, on one line.
func appendEntryData(dst []byte, e *raftpb.Entry, v *entryView) []byte {
	if v.decodeErr != nil {
		return fmt.Appendf(dst, "undecodable (%v): %s", v.decodeErr, hexPrefix(e.GetData(), 64))
	}
	switch {
	case v.req.Request != nil:
		return appendRequestText(dst, v.req.Request)
	case v.req.ConfChange != nil:
		cc := v.req.ConfChange
		dst = fmt.Appendf(dst, "%s node=%x", cc.GetType(), cc.GetNodeId())
		if cc.Id != nil {
			dst = fmt.Appendf(dst, " id=%x", cc.GetId())
		}
		return append(dst, contextText(cc.GetContext())...)
	case v.req.ConfChangeV2 != nil:
		cc := v.req.ConfChangeV2
		changes := make([]string, 0, len(cc.GetChanges()))
		for _, c := range cc.GetChanges() {
			changes = append(changes, fmt.Sprintf("%s %x", c.GetType(), c.GetNodeId()))
		}
		return fmt.Appendf(dst, "transition=%s changes=[%s]%s", cc.GetTransition(), strings.Join(changes, ", "), contextText(cc.GetContext()))
	}
	return append(dst, "(empty)"...)
}

// appendRequestText appends an InternalRaftRequest: the request ID, the
// user it runs as, and the request.
func appendRequestText(dst []byte, r *pb.InternalRaftRequest) []byte {
	h := r.GetHeader()
	id := h.GetID()
	if id == 0 {
		id = r.GetID()
	}
	dst = strconv.AppendUint(append(dst, "id="...), id, 16)
	if h.GetUsername() != "" {
		dst = appendTextProto(append(dst, " user="...), h.GetUsername())
	}
	if h.GetAuthRevision() != 0 {
		dst = strconv.AppendUint(append(dst, " auth_revision="...), h.GetAuthRevision(), 10)
	}
	if fastRenderable(r) {
		return appendRequestBody(append(dst, ' '), r)
	}
	if body := compactTextExcept(r.ProtoReflect(), "header", "ID"); body != "" {
		dst = append(append(dst, ' '), body...)
	}
	return dst
}

// requestBodyText renders the request r carries, without its header.
func requestBodyText(r *pb.InternalRaftRequest) string {
	if fastRenderable(r) {
		return string(appendRequestBody(nil, r))
	}
	return compactTextExcept(r.ProtoReflect(), "header", "ID")
}

// contextText renders a conf change context: JSON as is, else quoted.
func contextText(ctx []byte) string {
	if len(ctx) == 0 {
		return ""
	}
	if json.Valid(ctx) {
		return " context=" + string(ctx)
	}
	return " context=" + textProtoString(ctx)
}

// hexPrefix renders the first n bytes of b in hex.
func hexPrefix(b []byte, n int) string {
	if len(b) <= n {
		return hex.EncodeToString(b)
	}
	return hex.EncodeToString(b[:n]) + "..."
}

// redactedRequest returns r, or a copy without secrets (passwords, tokens)
// if it carries any, for the JSON output.
func redactedRequest(r *pb.InternalRaftRequest) *pb.InternalRaftRequest {
	kind := walfmt.RequestKind(r)
	if !strings.HasPrefix(kind, "auth") {
		return r
	}
	c := proto.Clone(r).(*pb.InternalRaftRequest)
	clearSecrets(c.ProtoReflect())
	return c
}

// clearSecrets clears the redacted fields of m and of its sub-messages.
func clearSecrets(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case redactedFields[fd.Name()]:
			m.Clear(fd)
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap():
			clearSecrets(v.Message())
		}
		return true
	})
}

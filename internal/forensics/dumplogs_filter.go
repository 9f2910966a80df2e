package forensics

import (
	"sort"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// recordFilter selects the records dump-logs prints: --start-index and
// --end-index bound the entries, --entry-type names the kinds of entries
// and records wanted.
type recordFilter struct {
	start, end uint64          // end 0: no bound
	kinds      map[string]bool // nil: every kind
}

// Record kinds --entry-type accepts besides the entry kinds.
var recordKindNames = map[walfmt.RecordType]string{
	walfmt.RecordMetadata: "Metadata",
	walfmt.RecordEntry:    "Entry",
	walfmt.RecordState:    "HardState",
	walfmt.RecordCRC:      "CRC",
	walfmt.RecordSnapshot: "Snapshot",
}

// Entry kinds: etcd-dump-logs' names.
const (
	kindNormal         = "Normal"
	kindConfChange     = "ConfigChange"
	kindConfChangeV2   = "ConfigChangeV2"
	kindInternalRaft   = "InternalRaftRequest"
	kindRequestV2      = "Request" // v2 requests: etcd 3.7 writes none
	internalRaftPrefix = "IRR"
)

// validKinds lists every name --entry-type accepts.
func validKinds() []string {
	names := []string{kindNormal, kindConfChange, kindConfChangeV2, kindInternalRaft, kindRequestV2}
	for _, n := range recordKindNames {
		names = append(names, n)
	}
	fields := (&pb.InternalRaftRequest{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		switch name := string(fields.Get(i).Name()); name {
		case "header", "ID":
		default:
			names = append(names, requestKindName(name))
		}
	}
	sort.Strings(names)
	return names
}

// requestKindName turns a request's protobuf field name into its
// --entry-type name: delete_range → IRRDeleteRange.
func requestKindName(field string) string {
	var sb strings.Builder
	sb.WriteString(internalRaftPrefix)
	for part := range strings.SplitSeq(field, "_") {
		if part == "" {
			continue
		}
		sb.WriteString(strings.ToUpper(part[:1]))
		sb.WriteString(part[1:])
	}
	return sb.String()
}

// newRecordFilter checks the filter flags.
func newRecordFilter(start, end uint64, types string) (*recordFilter, error) {
	if end != 0 && end < start {
		return nil, cmderr.BadArgs("--end-index %d is below --start-index %d", end, start)
	}
	f := &recordFilter{start: start, end: end}
	if strings.TrimSpace(types) == "" {
		return f, nil
	}
	canonical := map[string]string{}
	for _, k := range validKinds() {
		canonical[strings.ToLower(k)] = k
	}
	f.kinds = map[string]bool{}
	for t := range strings.SplitSeq(types, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		k, ok := canonical[strings.ToLower(t)]
		if !ok {
			return nil, cmderr.BadArgs("unknown --entry-type %q; valid types: %s", t, strings.Join(validKinds(), ", "))
		}
		f.kinds[k] = true
	}
	return f, nil
}

// wantsRecord reports whether a record that is not an entry is printed.
func (f *recordFilter) wantsRecord(t walfmt.RecordType) bool {
	return f.kinds == nil || f.kinds[recordKindNames[t]]
}

// wantsEntry reports whether an entry is printed.
func (f *recordFilter) wantsEntry(e *raftpb.Entry, req walfmt.EntryRequest) bool {
	idx := e.GetIndex()
	if idx < f.start || (f.end != 0 && idx > f.end) {
		return false
	}
	if f.kinds == nil {
		return true
	}
	for _, k := range entryKinds(e, req) {
		if f.kinds[k] {
			return true
		}
	}
	return false
}

// entryKinds lists the --entry-type names an entry matches.
func entryKinds(e *raftpb.Entry, req walfmt.EntryRequest) []string {
	kinds := []string{recordKindNames[walfmt.RecordEntry]}
	switch e.GetType() {
	case raftpb.EntryType_EntryConfChange:
		return append(kinds, kindConfChange)
	case raftpb.EntryType_EntryConfChangeV2:
		return append(kinds, kindConfChangeV2)
	}
	kinds = append(kinds, kindNormal)
	if req.Request != nil {
		kinds = append(kinds, kindInternalRaft)
		if k := walfmt.RequestKind(req.Request); k != "" {
			kinds = append(kinds, requestKindName(k))
		}
	}
	return kinds
}

package forensics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// walRecordPrinter writes dump-logs' output, one record at a time.
type walRecordPrinter interface {
	// record prints a record; v is set for entries.
	record(it *walfmt.Item, v *entryView) error
	// damage prints a problem the decoder found.
	damage(e *walfmt.Error) error
	// summary ends the output.
	summary(s *walScan, shownEntries int) error
}

// walTablePrinter prints aligned columns, a line per segment start and a
// summary at the end.
type walTablePrinter struct {
	w       *bufio.Writer
	segment string
	line    []byte
}

func newWALTablePrinter(w io.Writer) *walTablePrinter {
	p := &walTablePrinter{w: bufio.NewWriterSize(w, 256<<10)}
	p.row("OFFSET", "RECORD", "TERM", "INDEX", "STATE", "TYPE", "DATA")
	return p
}

// row writes one line of the table.
func (p *walTablePrinter) row(offset, record, term, index, state, typ, data string) {
	b := p.rowStart(offset, record, term, index, state, typ)
	p.rowEnd(append(b, data...))
}

// rowStart returns the line buffer holding every column but the data.
func (p *walTablePrinter) rowStart(offset, record, term, index, state, typ string) []byte {
	b := p.line[:0]
	b = padLeft(b, offset, 10)
	b = append(b, "  "...)
	b = padRight(b, record, 10)
	b = padLeft(b, term, 6)
	b = append(b, ' ')
	b = padLeft(b, index, 10)
	b = append(b, "  "...)
	b = padRight(b, state, 12)
	return padRight(b, typ, 8)
}

// rowEnd writes the line b and keeps its buffer for the next one.
func (p *walTablePrinter) rowEnd(b []byte) {
	b = append(b, '\n')
	p.w.Write(b)
	p.line = b
}

func padLeft(b []byte, s string, width int) []byte {
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

func padRight(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return b
}

func (p *walTablePrinter) startSegment(path string) {
	if name := filepath.Base(path); name != p.segment {
		p.segment = name
		fmt.Fprintf(p.w, "# segment %s\n", name)
	}
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

func (p *walTablePrinter) record(it *walfmt.Item, v *entryView) error {
	p.startSegment(it.Segment.Path)
	off := strconv.FormatInt(it.Offset, 10)
	kind := it.Type.String()
	switch {
	case it.Entry != nil:
		e := it.Entry
		b := p.rowStart(off, kind, u64(e.GetTerm()), u64(e.GetIndex()), v.state, entryTypeName(e.GetType()))
		b = appendEntryData(b, e, v)
		if v.decoder != nil {
			b = append(append(append(append(b, " | decoder "...), v.decoder.Status...), ": "...), v.decoder.Output...)
		}
		p.rowEnd(b)
	case it.HardState != nil:
		hs := it.HardState
		p.row(off, kind, u64(hs.GetTerm()), "-", "-", "-", fmt.Sprintf("commit=%d vote=%x", hs.GetCommit(), hs.GetVote()))
	case it.Snapshot != nil:
		s := it.Snapshot
		data := "conf_state={}"
		if s.ConfState != nil {
			data = "conf_state={" + compactText(s.ConfState.ProtoReflect()) + "}"
		}
		p.row(off, kind, u64(s.Term), u64(s.Index), "-", "-", data)
	case it.Metadata != nil:
		p.row(off, kind, "-", "-", "-", "-", fmt.Sprintf("node=%x cluster=%x", it.Metadata.GetNodeID(), it.Metadata.GetClusterID()))
	default:
		p.row(off, kind, "-", "-", "-", "-", fmt.Sprintf("crc=%08x", it.CRC))
	}
	return nil
}

func (p *walTablePrinter) damage(e *walfmt.Error) error {
	p.startSegment(e.File)
	off := "-"
	if e.Offset >= 0 {
		off = strconv.FormatInt(e.Offset, 10)
	}
	p.row(off, "DAMAGE", "-", "-", "-", "-", e.Error())
	return nil
}

func (p *walTablePrinter) summary(s *walScan, shown int) error {
	fmt.Fprintf(p.w, "# %s\n", recordCountsText(s))
	fmt.Fprintf(p.w, "# %s; %d shown\n", entriesText(s), shown)
	fmt.Fprintf(p.w, "# %s\n", healthText(s))
	return p.w.Flush()
}

// recordCountsText says how many records of each type the WAL holds.
func recordCountsText(s *walScan) string {
	var parts []string
	for _, t := range []walfmt.RecordType{walfmt.RecordCRC, walfmt.RecordMetadata, walfmt.RecordSnapshot, walfmt.RecordState, walfmt.RecordEntry} {
		parts = append(parts, fmt.Sprintf("%d %s", s.counts[t], t))
	}
	return fmt.Sprintf("%d records in %d segment(s): %s", s.records, len(s.segments), strings.Join(parts, ", "))
}

// entriesText describes the raft log the WAL holds.
func entriesText(s *walScan) string {
	if s.entries == 0 {
		return fmt.Sprintf("no entries; commit index %d", s.commit())
	}
	return fmt.Sprintf("entries %d-%d, commit index %d (last hard state term %d, vote %x), %d superseded",
		s.firstIndex, s.lastIndex, s.commit(), s.lastHardState.GetTerm(), s.lastHardState.GetVote(), s.superseded)
}

// healthText is the verdict on the WAL's integrity.
func healthText(s *walScan) string {
	if s.healthy() {
		return fmt.Sprintf("crc chain and frames ok (last crc %08x)", s.lastCRC)
	}
	n := len(s.damage) + len(s.gaps)
	return fmt.Sprintf("DAMAGED: %d problem(s), first: %s", n, s.problem())
}

// walJSONPrinter prints one JSON object per line per record.
type walJSONPrinter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newWALJSONPrinter(w io.Writer) *walJSONPrinter {
	bw := bufio.NewWriterSize(w, 256<<10)
	return &walJSONPrinter{w: bw, enc: json.NewEncoder(bw)}
}

// walRecordJSON is one line of `dump-logs -w json`.
type walRecordJSON struct {
	Segment     string          `json:"segment"`
	Offset      int64           `json:"offset"`
	Record      string          `json:"record"`
	CRC         string          `json:"crc,omitempty"`
	NodeID      string          `json:"nodeID,omitempty"`
	ClusterID   string          `json:"clusterID,omitempty"`
	Term        *uint64         `json:"term,omitempty"`
	Index       *uint64         `json:"index,omitempty"`
	Vote        string          `json:"vote,omitempty"`
	Commit      *uint64         `json:"commit,omitempty"`
	ConfState   json.RawMessage `json:"confState,omitempty"`
	EntryType   string          `json:"entryType,omitempty"`
	State       string          `json:"state,omitempty"`
	RequestType string          `json:"requestType,omitempty"`
	Request     json.RawMessage `json:"request,omitempty"`
	DecodeError string          `json:"decodeError,omitempty"`
	Decoder     *decoderResult  `json:"decoder,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	Error       string          `json:"error,omitempty"`
}

func ptr(v uint64) *uint64 { return &v }

func (p *walJSONPrinter) record(it *walfmt.Item, v *entryView) error {
	r := walRecordJSON{Segment: filepath.Base(it.Segment.Path), Offset: it.Offset, Record: it.Type.String(), CRC: fmt.Sprintf("%08x", it.CRC)}
	switch {
	case it.Entry != nil:
		e := it.Entry
		r.Term, r.Index, r.EntryType, r.State, r.Decoder = ptr(e.GetTerm()), ptr(e.GetIndex()), e.GetType().String(), v.state, v.decoder
		if v.decodeErr != nil {
			r.DecodeError = v.decodeErr.Error()
		} else {
			r.RequestType, r.Request = requestJSON(v)
		}
	case it.HardState != nil:
		hs := it.HardState
		r.Term, r.Commit, r.Vote = ptr(hs.GetTerm()), ptr(hs.GetCommit()), fmt.Sprintf("%x", hs.GetVote())
	case it.Snapshot != nil:
		r.Term, r.Index = ptr(it.Snapshot.Term), ptr(it.Snapshot.Index)
		if it.Snapshot.ConfState != nil {
			r.ConfState = protoJSON(it.Snapshot.ConfState)
		}
	case it.Metadata != nil:
		r.NodeID, r.ClusterID = fmt.Sprintf("%x", it.Metadata.GetNodeID()), fmt.Sprintf("%x", it.Metadata.GetClusterID())
	}
	return p.enc.Encode(&r)
}

// requestJSON returns the kind and protojson encoding of an entry's data.
func requestJSON(v *entryView) (string, json.RawMessage) {
	switch {
	case v.req.Request != nil:
		kind := kindInternalRaft
		if k := walfmt.RequestKind(v.req.Request); k != "" {
			kind = requestKindName(k)
		}
		return kind, protoJSON(redactedRequest(v.req.Request))
	case v.req.ConfChange != nil:
		return kindConfChange, protoJSON(v.req.ConfChange)
	case v.req.ConfChangeV2 != nil:
		return kindConfChangeV2, protoJSON(v.req.ConfChangeV2)
	}
	return "", nil
}

// protoJSON encodes m with protojson (bytes in base64, 64-bit integers as
// strings). encoding/json compacts it when it is embedded.
func protoJSON(m proto.Message) json.RawMessage {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

func (p *walJSONPrinter) damage(e *walfmt.Error) error {
	return p.enc.Encode(&walRecordJSON{Segment: filepath.Base(e.File), Offset: e.Offset, Record: "damage",
		Reason: fmt.Sprint(e.Reason), Error: e.Error()})
}

func (p *walJSONPrinter) summary(*walScan, int) error { return p.w.Flush() }

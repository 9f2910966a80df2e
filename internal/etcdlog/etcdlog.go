// Package etcdlog writes slog records as etcd's logger (zap) writes them, so
// that the tools and tests that read etcd's logs read cairn's: JSON lines
// with level, ts, caller, msg and then the fields, or zap's console layout
// (ts, level, caller, msg, then the fields as JSON, tab-separated).
package etcdlog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Format is a log line layout: etcd's --log-format.
type Format int

const (
	JSON    Format = iota // {"level":"info","ts":"...","caller":"dir/file.go:N","msg":"...",...}
	Console               // ts<TAB>level<TAB>caller<TAB>msg<TAB>{fields}
)

// ParseFormat reads a --log-format value, with etcd's error.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "json":
		return JSON, nil
	case "console":
		return Console, nil
	}
	return 0, fmt.Errorf("unknown log format: %s, supported values json, console", s)
}

// Handler is a slog.Handler writing etcd's log lines.
type Handler struct {
	out    *output
	format Format
	level  slog.Leveler
	fields []byte // encoded fields of WithAttrs, each ,"key":value
	prefix string // group names of WithGroup, each followed by "."
}

type output struct {
	mu sync.Mutex
	w  io.Writer
}

// NewHandler returns a handler writing records at level or above to w.
func NewHandler(w io.Writer, format Format, level slog.Leveler) *Handler {
	return &Handler{out: &output{w: w}, format: format, level: level}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.fields = append([]byte(nil), h.fields...)
	for _, a := range attrs {
		c.fields = appendField(c.fields, h.prefix, a)
	}
	return &c
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	fields := h.fields
	r.Attrs(func(a slog.Attr) bool {
		fields = appendField(fields, h.prefix, a)
		return true
	})
	buf := make([]byte, 0, 256)
	ts := r.Time.UTC().AppendFormat(nil, "2006-01-02T15:04:05.000000Z07:00")
	caller := callerOf(r.PC)
	switch h.format {
	case Console:
		buf = append(buf, ts...)
		buf = append(buf, '\t')
		buf = append(buf, LevelName(r.Level)...)
		if caller != "" {
			buf = append(buf, '\t')
			buf = append(buf, caller...)
		}
		buf = append(buf, '\t')
		buf = append(buf, r.Message...)
		if len(fields) > 0 {
			buf = append(buf, "\t{"...)
			buf = append(buf, fields[1:]...) // without the first comma
			buf = append(buf, '}')
		}
	default:
		buf = append(buf, `{"level":"`...)
		buf = append(buf, LevelName(r.Level)...)
		buf = append(buf, `","ts":"`...)
		buf = append(buf, ts...)
		buf = append(buf, '"')
		if caller != "" {
			buf = append(buf, `,"caller":`...)
			buf = appendString(buf, caller)
		}
		buf = append(buf, `,"msg":`...)
		buf = appendString(buf, r.Message)
		buf = append(buf, fields...)
		buf = append(buf, '}')
	}
	buf = append(buf, '\n')
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := h.out.w.Write(buf)
	return err
}

// LevelName is zap's name of a level.
func LevelName(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}

// ParseLevel reads a --log-level value (etcd's names; panic and fatal log
// as errors).
func ParseLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error", "dpanic", "panic", "fatal":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unrecognized level: %q", s)
}

// callerOf is zap's short caller: the last directory and the file, and
// the line.
func callerOf(pc uintptr) string {
	if pc == 0 {
		return ""
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	if f.File == "" {
		return ""
	}
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		if j := strings.LastIndexByte(file[:i], '/'); j >= 0 {
			file = file[j+1:]
		}
	}
	return file + ":" + strconv.Itoa(f.Line)
}

func appendField(buf []byte, prefix string, a slog.Attr) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return buf
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			buf = appendField(buf, p, g)
		}
		return buf
	}
	buf = append(buf, ',')
	buf = appendString(buf, prefix+a.Key)
	buf = append(buf, ':')
	return appendValue(buf, a.Value)
}

func appendValue(buf []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendString(buf, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(buf, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(buf, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(buf, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(buf, v.Bool())
	case slog.KindDuration:
		return appendString(buf, v.Duration().String()) // zap's string durations: "7s"
	case slog.KindTime:
		return appendString(buf, v.Time().UTC().Format(time.RFC3339Nano))
	}
	x := v.Any()
	if err, ok := x.(error); ok {
		return appendString(buf, err.Error())
	}
	b, err := json.Marshal(x)
	if err != nil {
		return appendString(buf, fmt.Sprint(x))
	}
	return append(buf, b...)
}

// appendString appends s as a JSON string.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			buf = append(buf, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, `\u00`...)
				buf = append(buf, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}

package forensics

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// A compact, deterministic rendering of protobuf messages in the text
// format (`name:value name:{...}`), for the one-line views of the offline
// tools. Unlike a message's String method it never varies its spacing, and
// it hides secrets.

// redactedFields are the fields whose values are never printed.
var redactedFields = map[protoreflect.Name]bool{
	"password":       true,
	"hashedPassword": true,
	"simple_token":   true,
}

// leaseIDFields are the fields, reachable from an InternalRaftRequest, that
// hold a lease ID: rendered in hexadecimal, 16 digits, as etcdctl and the
// rest of cairn print lease IDs.
var leaseIDFields = map[protoreflect.FullName]bool{
	"etcdserverpb.PutRequest.lease":      true,
	"etcdserverpb.Compare.lease":         true,
	"etcdserverpb.LeaseGrantRequest.ID":  true,
	"etcdserverpb.LeaseRevokeRequest.ID": true,
	"etcdserverpb.LeaseCheckpoint.ID":    true,
}

// compactText renders m, fields in declaration order, unset fields left
// out, lease IDs in hexadecimal.
func compactText(m protoreflect.Message) string {
	var sb strings.Builder
	appendMessageText(&sb, m)
	return sb.String()
}

// compactTextExcept renders m like compactText without the named fields.
func compactTextExcept(m protoreflect.Message, skip ...protoreflect.Name) string {
	var sb strings.Builder
	appendFieldsText(&sb, m, skip)
	return sb.String()
}

func appendMessageText(sb *strings.Builder, m protoreflect.Message) {
	appendFieldsText(sb, m, nil)
}

func appendFieldsText(sb *strings.Builder, m protoreflect.Message, skip []protoreflect.Name) {
	// Range visits only the populated fields, far cheaper than asking Has of
	// every field; sort them back into declaration order.
	var buf [8]setField
	set := buf[:0]
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		for _, s := range skip {
			if fd.Name() == s {
				return true
			}
		}
		set = append(set, setField{fd, v})
		return true
	})
	for i := 1; i < len(set); i++ {
		for j := i; j > 0 && set[j].fd.Index() < set[j-1].fd.Index(); j-- {
			set[j], set[j-1] = set[j-1], set[j]
		}
	}
	first := true
	sep := func() {
		if !first {
			sb.WriteByte(' ')
		}
		first = false
	}
	for _, f := range set {
		fd, v := f.fd, f.v
		switch {
		case redactedFields[fd.Name()]:
			sep()
			sb.WriteString(string(fd.Name()))
			sb.WriteString(":<redacted>")
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				sep()
				appendFieldText(sb, fd, l.Get(j))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				sep()
				sb.WriteString(string(fd.Name()))
				sb.WriteString(":{key:")
				appendScalarText(sb, fd.MapKey(), k.Value())
				sb.WriteString(" value:")
				appendScalarText(sb, fd.MapValue(), mv)
				sb.WriteByte('}')
				return true
			})
		default:
			sep()
			appendFieldText(sb, fd, v)
		}
	}
}

// setField is a populated field of a message.
type setField struct {
	fd protoreflect.FieldDescriptor
	v  protoreflect.Value
}

func appendFieldText(sb *strings.Builder, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	sb.WriteString(string(fd.Name()))
	sb.WriteByte(':')
	appendScalarText(sb, fd, v)
}

func appendScalarText(sb *strings.Builder, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		sb.WriteByte('{')
		appendMessageText(sb, v.Message())
		sb.WriteByte('}')
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			sb.WriteString(string(ev.Name()))
		} else {
			sb.WriteString(strconv.Itoa(int(v.Enum())))
		}
	case protoreflect.StringKind:
		appendTextProtoString(sb, v.String())
	case protoreflect.BytesKind:
		appendTextProtoString(sb, v.Bytes())
	case protoreflect.Int64Kind:
		if leaseIDFields[fd.FullName()] {
			var buf [16]byte
			sb.Write(appendLeaseID(buf[:0], v.Int()))
			return
		}
		sb.WriteString(v.String())
	default:
		sb.WriteString(v.String())
	}
}

// textProtoString quotes b as protobuf's text format does: printable UTF-8
// as is, \" \\ \n \r \t, other control bytes and invalid UTF-8 as \x
// escapes, C1 controls as \u escapes.
func textProtoString(b []byte) string {
	return string(appendTextProto(nil, b))
}

// appendTextProtoString writes b quoted (see textProtoString) to sb.
func appendTextProtoString[T string | []byte](sb *strings.Builder, b T) {
	var buf [64]byte
	sb.Write(appendTextProto(buf[:0], b))
}

// appendTextProto appends b quoted (see textProtoString) to dst.
func appendTextProto[T string | []byte](dst []byte, b T) []byte {
	dst = append(dst, '"')
	if plainText(b) {
		dst = append(dst, b...)
		return append(dst, '"')
	}
	for len(b) > 0 {
		var r rune
		var n int
		switch s := any(b).(type) {
		case string:
			r, n = utf8.DecodeRuneInString(s)
		case []byte:
			r, n = utf8.DecodeRune(s)
		}
		switch {
		case r == utf8.RuneError && n == 1:
			dst = appendHexPadded(append(dst, `\x`...), uint64(b[0]), 2)
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r < ' ' || r == 0x7f:
			dst = appendHexPadded(append(dst, `\x`...), uint64(r), 2)
		case r >= utf8.RuneSelf && r <= 0x9f:
			dst = appendHexPadded(append(dst, `\u`...), uint64(r), 4)
		default:
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return append(dst, '"')
}

// plainText reports whether b is printable ASCII with no quote or
// backslash, which the text format writes as is.
func plainText[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendLeaseID appends a lease ID in hexadecimal, 16 digits.
func appendLeaseID(out []byte, id int64) []byte { return appendHexPadded(out, uint64(id), 16) }

// appendHexPadded appends v in hexadecimal, zero-padded to width digits.
func appendHexPadded(out []byte, v uint64, width int) []byte {
	digits := max(1, (bits.Len64(v)+3)/4)
	for ; digits < width; digits++ {
		out = append(out, '0')
	}
	return strconv.AppendUint(out, v, 16)
}

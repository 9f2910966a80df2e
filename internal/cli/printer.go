package cli

import (
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/cli/cmderr"
)

// Output formats of --write-out.
const (
	formatSimple   = "simple"
	formatJSON     = "json"
	formatFields   = "fields"
	formatTable    = "table"
	formatProtobuf = "protobuf"
)

// printer writes command results in the format --write-out asks for. A
// result supports a format by implementing that format's interface below;
// printing it in another format fails as etcdctl does.
type printer struct {
	w      io.Writer
	format string
	hex    bool // --hex: byte strings and IDs in hexadecimal
}

type (
	// simplePrintable results print in the human-readable default format.
	simplePrintable interface{ printSimple(p *printer) }
	// fieldsPrintable results print one `"Name" : value` line per field.
	fieldsPrintable interface{ printFields(p *printer) }
	// jsonPrintable results print as the JSON encoding of a value.
	jsonPrintable interface{ jsonValue(p *printer) any }
	// tablePrintable results print as a table of strings.
	tablePrintable interface {
		tableRows(p *printer) (header []string, rows [][]string)
	}
	// protobufPrintable results print as a marshalled protobuf message.
	protobufPrintable interface{ protoMessage() proto.Message }
	// anyFormatPrintable results print the same way whatever the format.
	anyFormatPrintable interface{ printAnyFormat(p *printer) error }
)

// print writes result in the printer's format.
func (p *printer) print(result any) error {
	if r, ok := result.(anyFormatPrintable); ok {
		return r.printAnyFormat(p)
	}
	supported := false
	switch p.format {
	case formatSimple:
		if r, ok := result.(simplePrintable); ok {
			supported = true
			r.printSimple(p)
		}
	case formatFields:
		if r, ok := result.(fieldsPrintable); ok {
			supported = true
			r.printFields(p)
		}
	case formatJSON:
		if r, ok := result.(jsonPrintable); ok {
			supported = true
			return p.printJSON(r.jsonValue(p))
		}
	case formatTable:
		if r, ok := result.(tablePrintable); ok {
			supported = true
			return p.printTable(r.tableRows(p))
		}
	case formatProtobuf:
		if r, ok := result.(protobufPrintable); ok {
			supported = true
			return p.printProtobuf(r)
		}
	}
	if !supported {
		return cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("%s not supported as output format", p.format))
	}
	return nil
}

// line writes one line made of args separated by spaces.
func (p *printer) line(args ...any) {
	fmt.Fprintln(p.w, args...)
}

// linef writes one formatted line.
func (p *printer) linef(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

// text renders a byte string for the simple format: as is, or with --hex
// as \x escapes of every byte.
func (p *printer) text(b []byte) string {
	if !p.hex {
		return string(b)
	}
	var sb strings.Builder
	for _, c := range b {
		fmt.Fprintf(&sb, `\x%02x`, c)
	}
	return sb.String()
}

// id renders a cluster or member ID: decimal, or hexadecimal with --hex.
func (p *printer) id(id uint64) string {
	if p.hex {
		return fmt.Sprintf("%x", id)
	}
	return fmt.Sprint(id)
}

// Package printer is the output formats of the commands' --write-out:
// simple (etcdctl's default), fields, json, table and protobuf, and the
// results of the client commands in each (one file per format). A
// command's result chooses its formats by the methods it has. It
// imports no cairn package but cmderr and keyrange, so that the offline
// commands may print with it too.
package printer

import (
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

// Output formats of --write-out.
const (
	FormatSimple   = "simple"
	FormatJSON     = "json"
	FormatFields   = "fields"
	FormatTable    = "table"
	FormatProtobuf = "protobuf"
)

// Printer writes command results in the format --write-out asks for. A
// result supports a format by having that format's method, as in the
// interfaces below; printing it in another format fails as etcdctl does.
type Printer struct {
	w      io.Writer
	format string
	hex    bool // --hex: byte strings and IDs in hexadecimal
}

// New returns a printer of format to w; hex prints byte strings and IDs
// in hexadecimal (--hex).
func New(w io.Writer, format string, hex bool) *Printer {
	return &Printer{w: w, format: format, hex: hex}
}

// Writer is where p prints.
func (p *Printer) Writer() io.Writer { return p.w }

// WithWriter is a printer of p's format to w.
func (p *Printer) WithWriter(w io.Writer) *Printer {
	return &Printer{w: w, format: p.format, hex: p.hex}
}

type (
	// simplePrintable results print in the human-readable default format.
	simplePrintable interface{ PrintSimple(p *Printer) }
	// fieldsPrintable results print one `"Name" : value` line per field.
	fieldsPrintable interface{ PrintFields(p *Printer) }
	// jsonPrintable results print as the JSON encoding of a value.
	jsonPrintable interface{ JSONValue(p *Printer) any }
	// tablePrintable results print as a table of strings.
	tablePrintable interface {
		TableRows(p *Printer) (header []string, rows [][]string)
	}
	// protobufPrintable results print as a marshalled protobuf message.
	protobufPrintable interface{ protoMessage() proto.Message }
	// anyFormatPrintable results print the same way whatever the format.
	anyFormatPrintable interface{ printAnyFormat(p *Printer) error }
)

// Print writes result in the printer's format.
func (p *Printer) Print(result any) error {
	if r, ok := result.(anyFormatPrintable); ok {
		return r.printAnyFormat(p)
	}
	supported := false
	switch p.format {
	case FormatSimple:
		if r, ok := result.(simplePrintable); ok {
			supported = true
			r.PrintSimple(p)
		}
	case FormatFields:
		if r, ok := result.(fieldsPrintable); ok {
			supported = true
			r.PrintFields(p)
		}
	case FormatJSON:
		if r, ok := result.(jsonPrintable); ok {
			supported = true
			return p.PrintJSON(r.JSONValue(p))
		}
	case FormatTable:
		if r, ok := result.(tablePrintable); ok {
			supported = true
			return p.printTable(r.TableRows(p))
		}
	case FormatProtobuf:
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

// Line writes one line made of args separated by spaces.
func (p *Printer) Line(args ...any) {
	fmt.Fprintln(p.w, args...)
}

// Linef writes one formatted line.
func (p *Printer) Linef(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

// text renders a byte string for the simple format: as is, or with --hex
// as \x escapes of every byte.
func (p *Printer) text(b []byte) string {
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
func (p *Printer) id(id uint64) string {
	if p.hex {
		return fmt.Sprintf("%x", id)
	}
	return fmt.Sprint(id)
}

// HumanBytes writes a size in SI units, as "20 kB" or "2.1 GB".
func HumanBytes(n int64) string {
	const unit = 1000
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	exp := 0
	value := float64(n)
	for value >= unit && exp < len(units)-1 {
		value /= unit
		exp++
	}
	value = float64(int64(value*10+0.5)) / 10
	if value < 10 {
		return fmt.Sprintf("%.1f %s", value, units[exp])
	}
	return fmt.Sprintf("%.0f %s", value, units[exp])
}

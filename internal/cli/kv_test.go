package cli

import (
	"strings"
	"testing"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

func TestGetFlagsChecked(t *testing.T) {
	tests := []struct {
		opts   getOptions
		format string
		want   string
		code   int
	}{
		{getOptions{countOnly: true}, printer.FormatSimple, "--count-only is only for `--write-out=fields`", cmderr.ExitBadArgs},
		{getOptions{printValueOnly: true}, printer.FormatJSON, "print-value-only is only for `--write-out=simple`", cmderr.ExitBadArgs},
		{getOptions{consistency: "x"}, printer.FormatSimple, `unknown consistency flag "x"`, cmderr.ExitBadFeature},
		{getOptions{consistency: "l", sortBy: "SIZE"}, printer.FormatSimple, "bad sort target SIZE", cmderr.ExitBadFeature},
		{getOptions{consistency: "l", order: "UP"}, printer.FormatSimple, "bad sort order UP", cmderr.ExitBadFeature},
	}
	for _, tt := range tests {
		err := tt.opts.checkFormat(tt.format)
		if err == nil {
			_, err = tt.opts.request([]string{"k"})
		}
		if err == nil || err.Error() != tt.want || cmderr.ExitCode(err) != tt.code {
			t.Errorf("%+v -w %s: error %v (exit %d), want %q (exit %d)", tt.opts, tt.format, err, cmderr.ExitCode(err), tt.want, tt.code)
		}
	}
}

func TestPutReadsValueFromStdin(t *testing.T) {
	o := putOptions{lease: "0"}
	req, err := o.request([]string{"k"}, strings.NewReader("line\n"))
	if err != nil || string(req.Value) != "line\n" {
		t.Fatalf("put k < 'line\\n' = %v, %v; want value %q", req, err, "line\n")
	}
	if _, err := o.request([]string{"k"}, strings.NewReader("")); cmderr.ExitCode(err) != cmderr.ExitBadArgs {
		t.Fatalf("put k < /dev/null: error %v, want a bad-arguments error", err)
	}
	o.lease = "1f"
	if req, err := o.request([]string{"k", "v"}, nil); err != nil || req.Lease != 0x1f {
		t.Fatalf("put --lease 1f = %v, %v; want lease 0x1f", req, err)
	}
}

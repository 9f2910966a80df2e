package forensics

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

// streamDecoder runs the --stream-decoder program of dump-logs, as
// etcd-dump-logs does: each entry's data goes to the program's stdin as
// one line of hex, and the program answers each line with one line,
// "STATUS|DECODED". The exchange is one line at a time, so the program must
// flush after each line.
type streamDecoder struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	buf  []byte
}

// decoderResult is the program's answer for one entry.
type decoderResult struct {
	Status string `json:"status"`
	Output string `json:"output"`
}

// startStreamDecoder starts the program; command is its path followed by
// its arguments, separated by spaces.
func startStreamDecoder(command string) (*streamDecoder, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return nil, cmderr.BadArgs("--stream-decoder is empty")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stream decoder %s: %w", argv[0], err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stream decoder %s: %w", argv[0], err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start stream decoder %s: %w", argv[0], err)
	}
	return &streamDecoder{name: argv[0], cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// decode sends data and reads the program's answer.
func (d *streamDecoder) decode(data []byte) (*decoderResult, error) {
	d.buf = hex.AppendEncode(d.buf[:0], data)
	d.buf = append(d.buf, '\n')
	if _, err := d.in.Write(d.buf); err != nil {
		return nil, fmt.Errorf("stream decoder %s: write: %w", d.name, err)
	}
	line, err := d.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("stream decoder %s: no answer: %w", d.name, err)
	}
	line = strings.TrimRight(line, "\r\n")
	status, output, ok := strings.Cut(line, "|")
	if !ok {
		return &decoderResult{Status: "decoder output format is not right, print output anyway", Output: line}, nil
	}
	return &decoderResult{Status: status, Output: output}, nil
}

// close ends the program's input and waits for it to exit.
func (d *streamDecoder) close() error {
	if d == nil {
		return nil
	}
	d.in.Close()
	if err := d.cmd.Wait(); err != nil {
		return fmt.Errorf("stream decoder %s: %w", d.name, err)
	}
	return nil
}

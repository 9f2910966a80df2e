package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// The conventions of the documents' command examples (docs/development.md):
//
//   - a command example is a fenced block tagged console: a line that starts
//     with "$ " is a command; it goes on over the next line while a line ends
//     with a backslash, and over the lines that start with "> " (a heredoc's
//     body, as a shell's second prompt shows it); the other lines up to the
//     next command are what it prints;
//   - blocks tagged sh, bash, shell or zsh are refused, and so is a "$ " line
//     in a block of any other tag: every example is a console block;
//   - the line before a console block may be a marker, an HTML comment:
//     <!-- doc-example: skip (why) --> leaves the block out of the test, and
//     <!-- doc-example: needs etcdctl --> runs it only where that binary is
//     found.

// example is one command of a document and what the document says it prints.
type example struct {
	line int      // of the "$ " line, 1-based
	cmd  string   // the command, its continuation lines joined with newlines
	want []string // the lines it prints
}

// block is one console block.
type block struct {
	line     int // of the opening fence
	skip     string
	needs    []string
	examples []example
}

var (
	markerRE  = regexp.MustCompile(`^<!--\s*doc-example:\s*(.*?)\s*-->$`)
	skipRE    = regexp.MustCompile(`^skip \((.+)\)$`)
	needsRE   = regexp.MustCompile(`^needs ([a-z0-9_-]+(?:,\s*[a-z0-9_-]+)*)$`)
	shellTags = map[string]bool{"sh": true, "bash": true, "shell": true, "zsh": true}
)

// extract returns the console blocks of a markdown document, or the lines
// that break the conventions.
func extract(text string) ([]block, []error) {
	var (
		blocks []block
		errs   []error
		marker *block // a marker waiting for its block
		lines  = strings.Split(text, "\n")
	)
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...)))
	}
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(trimmed, "```") {
			if m := markerRE.FindStringSubmatch(trimmed); m != nil {
				if marker != nil {
					fail(marker.line, "doc-example marker not followed by a console block")
				}
				marker = parseMarker(i+1, m[1], fail)
			} else if trimmed != "" && marker != nil {
				fail(marker.line, "doc-example marker not followed by a console block")
				marker = nil
			}
			continue
		}
		tag := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			fail(start+1, "fenced block never closed")
		}
		switch {
		case tag == "console":
			b := block{line: start + 1}
			if marker != nil {
				b.skip, b.needs = marker.skip, marker.needs
				marker = nil
			}
			b.examples = parseConsole(start+2, body, fail)
			blocks = append(blocks, b)
		case shellTags[tag]:
			fail(start+1, "a ```%s block: command examples are ```console blocks with \"$ \" before each command", tag)
		default:
			for j, l := range body {
				if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
					fail(start+2+j, "a command in a ```%s block: command examples are ```console blocks", tag)
				}
			}
		}
		if marker != nil {
			fail(marker.line, "doc-example marker not followed by a console block")
			marker = nil
		}
	}
	if marker != nil {
		fail(marker.line, "doc-example marker not followed by a console block")
	}
	return blocks, errs
}

// parseMarker reads the text of a doc-example marker.
func parseMarker(line int, text string, fail func(int, string, ...any)) *block {
	b := &block{line: line}
	if m := skipRE.FindStringSubmatch(text); m != nil {
		b.skip = m[1]
	} else if m := needsRE.FindStringSubmatch(text); m != nil {
		for _, n := range strings.Split(m[1], ",") {
			b.needs = append(b.needs, strings.TrimSpace(n))
		}
	} else {
		fail(line, "doc-example marker %q: want \"skip (why)\" or \"needs BINARY\"", text)
	}
	return b
}

// parseConsole reads the commands and outputs of a console block whose
// first body line is line first.
func parseConsole(first int, body []string, fail func(int, string, ...any)) []example {
	var exs []example
	for j := 0; j < len(body); j++ {
		l := strings.TrimRight(body[j], " \t")
		if !strings.HasPrefix(l, "$ ") {
			if len(exs) == 0 {
				if l != "" {
					fail(first+j, "console block: output before any \"$ \" command")
				}
				continue
			}
			exs[len(exs)-1].want = append(exs[len(exs)-1].want, l)
			continue
		}
		ex := example{line: first + j, cmd: strings.TrimPrefix(l, "$ ")}
		for j+1 < len(body) {
			next := body[j+1]
			if strings.HasPrefix(next, "> ") || next == ">" {
				ex.cmd += "\n" + strings.TrimPrefix(strings.TrimPrefix(next, ">"), " ")
			} else if strings.HasSuffix(ex.cmd, `\`) {
				ex.cmd += "\n" + next
			} else {
				break
			}
			j++
		}
		exs = append(exs, ex)
	}
	for k := range exs {
		for len(exs[k].want) > 0 && exs[k].want[len(exs[k].want)-1] == "" {
			exs[k].want = exs[k].want[:len(exs[k].want)-1]
		}
	}
	return exs
}

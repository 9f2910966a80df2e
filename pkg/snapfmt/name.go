package snapfmt

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Ext is the file name extension of raft snapshot files.
const Ext = ".snap"

// File is a .snap file, named after the term and index of its snapshot.
type File struct {
	Path  string
	Term  uint64
	Index uint64
}

// FileName is the name of the .snap file of a snapshot at term and index.
func FileName(term, index uint64) string {
	return fmt.Sprintf("%016x-%016x%s", term, index, Ext)
}

// ParseFileName returns the term and index in a .snap file name.
func ParseFileName(name string) (term, index uint64, err error) {
	stem, ok := strings.CutSuffix(name, Ext)
	if !ok {
		return 0, 0, fmt.Errorf("%w: %q does not end in %s", ErrBadName, name, Ext)
	}
	termHex, indexHex, ok := strings.Cut(stem, "-")
	if !ok || len(termHex) != 16 || len(indexHex) != 16 {
		return 0, 0, fmt.Errorf("%w: %q is not %%016x-%%016x%s", ErrBadName, name, Ext)
	}
	if term, err = strconv.ParseUint(termHex, 16, 64); err != nil {
		return 0, 0, fmt.Errorf("%w: %q: term: %v", ErrBadName, name, err)
	}
	if index, err = strconv.ParseUint(indexHex, 16, 64); err != nil {
		return 0, 0, fmt.Errorf("%w: %q: index: %v", ErrBadName, name, err)
	}
	return term, index, nil
}

// Skipped is a snapshot file passed over, and why.
type Skipped struct {
	Path string
	Err  error
}

// List returns the .snap files in dir, oldest (lowest term, then index)
// first, and the .snap files whose names do not parse. Other files (such as
// the db, *.snap.db and *.tmp files) are ignored.
func List(dir string) ([]File, []Skipped, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list snap dir %s: %w", dir, err)
	}
	var files []File
	var bad []Skipped
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, Ext) {
			continue
		}
		path := filepath.Join(dir, name)
		term, index, err := ParseFileName(name)
		if err != nil {
			bad = append(bad, Skipped{Path: path, Err: err})
			continue
		}
		files = append(files, File{Path: path, Term: term, Index: index})
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].Term != files[j].Term {
			return files[i].Term < files[j].Term
		}
		return files[i].Index < files[j].Index
	})
	return files, bad, nil
}

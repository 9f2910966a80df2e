package serve

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/viper"
)

// logRotation is --log-rotation-config-json, the keys of etcd's (lumberjack's).
type logRotation struct {
	MaxSize    int  `json:"maxsize"`    // megabytes a file may reach before it is rotated
	MaxAge     int  `json:"maxage"`     // days a rotated file is kept; 0: no limit
	MaxBackups int  `json:"maxbackups"` // rotated files kept; 0: no limit
	LocalTime  bool `json:"localtime"`  // rotated files are named in local time, not UTC
	Compress   bool `json:"compress"`   // rotated files are gzipped
}

// logRotationFrom is --enable-log-rotation with its configuration, checked
// as etcd does: one file among the log outputs and a configuration that is
// JSON. Without the flag it returns nil.
func logRotationFrom(v *viper.Viper) (*logRotation, error) {
	if !v.GetBool("enable-log-rotation") {
		return nil, nil
	}
	files := 0
	for _, o := range splitList(v.GetString("log-outputs")) {
		if o != "default" && o != "stderr" && o != "stdout" {
			files++
		}
	}
	if files != 1 {
		return nil, errors.New("--log-outputs requires a single file path when --log-rotate-config-json is defined")
	}
	r := &logRotation{}
	if err := json.Unmarshal([]byte(v.GetString("log-rotation-config-json")), r); err != nil {
		return nil, fmt.Errorf("improperly formatted log rotation config: %w", err)
	}
	if r.MaxSize <= 0 {
		r.MaxSize = 100
	}
	return r, nil
}

// rotatingFile is a log file that is renamed to NAME-TIMESTAMP.EXT once it
// would grow past MaxSize, and started anew; the rotated files beyond
// MaxBackups or older than MaxAge are removed.
type rotatingFile struct {
	cfg  logRotation
	path string
	mu   sync.Mutex
	f    *os.File
	size int64
}

const rotatedTimeFormat = "2006-01-02T15-04-05.000"

func (r *logRotation) open(path string) (*rotatingFile, error) {
	rf := &rotatingFile{cfg: *r, path: path}
	return rf, rf.openFile()
}

func (rf *rotatingFile) openFile() error {
	f, err := os.OpenFile(rf.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open sink %q: %w", rf.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	rf.f, rf.size = f, st.Size()
	return nil
}

func (rf *rotatingFile) Write(p []byte) (int, error) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.size > 0 && rf.size+int64(len(p)) > int64(rf.cfg.MaxSize)<<20 {
		if err := rf.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := rf.f.Write(p)
	rf.size += int64(n)
	return n, err
}

// rotate renames the current file, starts a new one and prunes the old.
func (rf *rotatingFile) rotate() error {
	if err := rf.f.Close(); err != nil {
		return err
	}
	now := time.Now().UTC()
	if rf.cfg.LocalTime {
		now = time.Now()
	}
	ext := filepath.Ext(rf.path)
	var rotated string
	for ; ; now = now.Add(time.Millisecond) { // a name of its own, even two rotations in a millisecond
		rotated = strings.TrimSuffix(rf.path, ext) + "-" + now.Format(rotatedTimeFormat) + ext
		if _, err := os.Stat(rotated); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(rotated + ".gz"); errors.Is(err, os.ErrNotExist) {
				break
			}
		}
	}
	if err := os.Rename(rf.path, rotated); err != nil {
		return err
	}
	if rf.cfg.Compress {
		if err := gzipFile(rotated); err != nil {
			return err
		}
	}
	if err := rf.openFile(); err != nil {
		return err
	}
	rf.prune(now)
	return nil
}

// prune removes the rotated files beyond MaxBackups (the oldest first) and
// those older than MaxAge days.
func (rf *rotatingFile) prune(now time.Time) {
	ext := filepath.Ext(rf.path)
	prefix := strings.TrimSuffix(rf.path, ext) + "-"
	old, _ := filepath.Glob(prefix + "*" + ext + "*")
	slices.Sort(old) // the names sort as their times
	for i, p := range old {
		stamp := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(p, prefix), ".gz"), ext)
		t, err := time.ParseInLocation(rotatedTimeFormat, stamp, now.Location())
		if err != nil {
			continue
		}
		tooMany := rf.cfg.MaxBackups > 0 && len(old)-i > rf.cfg.MaxBackups
		tooOld := rf.cfg.MaxAge > 0 && now.Sub(t) > time.Duration(rf.cfg.MaxAge)*24*time.Hour
		if tooMany || tooOld {
			os.Remove(p)
		}
	}
}

// gzipFile replaces path by path.gz.
func gzipFile(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(path+".gz", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Remove(path)
}

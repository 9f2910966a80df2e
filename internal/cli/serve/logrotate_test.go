package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// TestLogRotation: --enable-log-rotation rotates the log file once it
// would pass maxsize, gzips the rotated files with compress and keeps
// maxbackups of them.
func TestLogRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "member.log")
	v := viper.New()
	v.Set("enable-log-rotation", true)
	v.Set("log-outputs", path)
	v.Set("log-rotation-config-json", `{"maxsize": 1, "maxbackups": 2, "compress": true}`)
	r, err := logRotationFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.open(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 600<<10)
	for i := 0; i < 5; i++ { // two chunks pass 1 MB: four rotations
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	rotated, err := filepath.Glob(filepath.Join(dir, "member-*.log.gz"))
	if err != nil || len(rotated) != 2 {
		t.Errorf("rotated files %v (%v), want 2 (maxbackups)", rotated, err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != int64(len(chunk)) {
		t.Errorf("current file: %v, %v", st, err)
	}
	v.Set("log-outputs", "stderr")
	if _, err := logRotationFrom(v); err == nil || !strings.Contains(err.Error(), "--log-outputs requires a single file path") {
		t.Errorf("rotation of stderr: %v", err)
	}
	v.Set("log-outputs", path)
	v.Set("log-rotation-config-json", "bad")
	if _, err := logRotationFrom(v); err == nil || !strings.Contains(err.Error(), "improperly formatted log rotation config: invalid character 'b'") {
		t.Errorf("bad configuration: %v", err)
	}
}

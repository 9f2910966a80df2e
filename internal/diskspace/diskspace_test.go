package diskspace

import (
	"math"
	"testing"
)

func TestFree(t *testing.T) {
	dir := t.TempDir()
	free, err := Free(dir)
	if err != nil || free == 0 {
		t.Fatalf("Free(%s) = %d, %v: a test's temporary folder has some room", dir, free, err)
	}
	if _, short, err := FirstShort(1, dir); short || err != nil {
		t.Fatalf("FirstShort(1 byte) = short %v, %v", short, err)
	}
	s, short, err := FirstShort(math.MaxUint64, dir)
	if !short || err != nil || s.Dir != dir || s.Need != math.MaxUint64 || s.Free == 0 {
		t.Fatalf("FirstShort(all the bytes there are) = %+v, short %v, %v", s, short, err)
	}
	if _, _, err := FirstShort(1, dir+"/absent"); err == nil {
		t.Fatal("FirstShort of a folder that does not exist: no error")
	}
}

package walfmt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BrokenExt is appended to a segment's name for the file that keeps the bytes
// Repair cut off it.
const BrokenExt = ".broken"

// RepairResult says what Repair cut.
type RepairResult struct {
	// Damage is the problem found in the last segment.
	Damage *Error
	// Segment is the path of the segment that was truncated.
	Segment string
	// Offset is where it was truncated: the end of its last good frame.
	Offset int64
	// CutBytes is how many bytes were cut.
	CutBytes int64
	// BrokenPath is the file that now holds the cut bytes.
	BrokenPath string
}

// repairable are the kinds of damage a crash in the middle of a write leaves.
var repairable = []error{ErrTornFrame, ErrBadFrame, ErrBadRecord, ErrCRCMismatch, ErrDataAfterTail}

// Repair fixes the one kind of damage a crash leaves in a WAL: a torn,
// partially written or garbled tail at the end of the last segment. It reads
// the whole WAL in dir; if the first damage is in the last segment, after its
// crc and metadata records, and no trustworthy frame follows it (a frame that
// decodes and is continued by a frame chaining on its crc, or that ends the
// file), it saves the bytes from the damage to the end of the file in
// FILE.broken and truncates the segment at the damage. It returns nil and no
// error when there is nothing to repair. Any other damage — in an earlier
// segment, a missing segment, a bad file name, damage followed by good records
// — is refused with an error wrapping ErrNotRepairable and the *Error found:
// truncating there could drop records that were acknowledged.
//
// Unlike etcd, which treats any record holding an all-zero 512-byte sector as
// torn, Repair refuses when good records follow such a record: that pattern
// is also what a corrupted record whose data holds zeros looks like.
//
// It first takes the lock of the last segment, which a Writer on dir (a
// running member, cairn's or etcd's) holds, and fails with an error wrapping
// ErrLocked, having read nothing, if it cannot.
func Repair(dir string) (*RepairResult, error) {
	segs, err := ListSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("repair wal %s: %w: %w", dir, ErrNotRepairable, err)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("repair wal %s: %w", dir, ErrNoWAL)
	}
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last.Path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("repair wal %s: %w", dir, err)
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		return nil, fmt.Errorf("repair wal %s: lock %s: %w", dir, last.Name(), err)
	}
	damage, err := repairPlan(dir, segs, f)
	if err != nil || damage == nil {
		return nil, err
	}
	return cutTail(f, last, damage)
}

// CheckRepair tells, reading only, what Repair would do to the WAL in dir:
// the damage it would cut the last segment at, nil and no error if there
// is nothing to repair, or an error wrapping ErrNotRepairable if it would
// refuse. It takes no lock: on a WAL being written the answer may be stale.
func CheckRepair(dir string) (*Error, error) {
	segs, err := ListSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("repair wal %s: %w: %w", dir, ErrNotRepairable, err)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("repair wal %s: %w", dir, ErrNoWAL)
	}
	f, err := os.Open(segs[len(segs)-1].Path)
	if err != nil {
		return nil, fmt.Errorf("repair wal %s: %w", dir, err)
	}
	defer f.Close()
	return repairPlan(dir, segs, f)
}

// repairPlan finds the damage Repair would cut the last segment, open as
// last, at; see Repair for when it refuses.
func repairPlan(dir string, segs []Segment, last *os.File) (*Error, error) {
	damage, headerEnd, err := firstDamage(segs)
	if err != nil || damage == nil {
		return nil, err
	}
	refuse := func(why string, args ...any) (*Error, error) {
		return nil, fmt.Errorf("repair wal %s: %w: %s: %w", dir, ErrNotRepairable, fmt.Sprintf(why, args...), damage)
	}
	lastSeg := segs[len(segs)-1]
	if damage.File != lastSeg.Path {
		return refuse("damage is not in the last segment %s", lastSeg.Name())
	}
	if !isAny(damage, repairable) {
		return refuse("not a torn tail")
	}
	if headerEnd < 0 || damage.Offset < headerEnd {
		return refuse("damage in the segment's crc and metadata records")
	}
	st, err := last.Stat()
	if err != nil {
		return nil, fmt.Errorf("repair wal %s: %w", dir, err)
	}
	next, err := findFrameStart(last, damage.Offset+frameHeaderSize, st.Size())
	if err != nil {
		return nil, fmt.Errorf("repair wal %s at offset %d: %w", lastSeg.Path, damage.Offset, err)
	}
	if next >= 0 {
		return refuse("good records follow the damage, at offset %d", next)
	}
	return damage, nil
}

// firstDamage decodes segs and returns the first damage found, and the offset
// after the last segment's metadata record (-1 if not reached).
func firstDamage(segs []Segment) (*Error, int64, error) {
	last := segs[len(segs)-1]
	d := NewDecoder(segs, DecoderOptions{VerifyTail: true})
	defer d.Close()
	headerEnd := int64(-1)
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			return nil, headerEnd, nil
		}
		var werr *Error
		if errors.As(err, &werr) {
			return werr, headerEnd, nil
		}
		if err != nil {
			return nil, headerEnd, err
		}
		if it.Segment == last && it.Type == RecordMetadata && headerEnd < 0 {
			headerEnd = it.Offset + it.FrameSize
		}
	}
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// cutTail moves the bytes of seg, open and locked as f, from damage.Offset
// on to seg.broken and truncates seg there (repairPlan has found that
// nothing trustworthy follows the damage).
func cutTail(f *os.File, seg Segment, damage *Error) (*RepairResult, error) {
	fail := func(err error) (*RepairResult, error) {
		return nil, fmt.Errorf("repair wal %s at offset %d: %w", seg.Path, damage.Offset, err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	size := st.Size()
	x := damage.Offset
	broken := seg.Path + BrokenExt
	if err := saveRange(broken, f, x, size); err != nil {
		return fail(err)
	}
	if err := f.Truncate(x); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := syncDir(filepath.Dir(seg.Path)); err != nil {
		return fail(err)
	}
	return &RepairResult{Damage: damage, Segment: seg.Path, Offset: x, CutBytes: size - x, BrokenPath: broken}, nil
}

// saveRange writes bytes [from, to) of src to a new file at path and syncs it.
func saveRange(path string, src io.ReaderAt, from, to int64) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, segmentMode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.NewSectionReader(src, from, to-from))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save cut bytes to %s: %w", path, err)
	}
	return nil
}

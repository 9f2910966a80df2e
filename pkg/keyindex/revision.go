package keyindex

import (
	"cmp"
	"fmt"
)

// Revision identifies one change in the store: Main is the revision of the
// request that made it, Sub the position of the change inside that request
// (0 for a plain put or delete, 0,1,2... for the operations of a txn).
type Revision struct {
	Main int64
	Sub  int64
}

// Compare returns -1, 0 or +1 as r is before, the same as, or after o: the
// order of their keys in the backend.
func (r Revision) Compare(o Revision) int {
	if c := cmp.Compare(r.Main, o.Main); c != 0 {
		return c
	}
	return cmp.Compare(r.Sub, o.Sub)
}

func (r Revision) String() string { return fmt.Sprintf("%d_%d", r.Main, r.Sub) }

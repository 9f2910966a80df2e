package diagnose

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cairnkv/cairn/internal/forensics"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/store"
)

// lockTimeout bounds the wait for the db lock of a running member: the
// dir is then reported as held, not waited for.
const lockTimeout = 2 * time.Second

// member is what could be read of one data directory. Every part is
// optional: damage is recorded next to what was read, never fatal.
type member struct {
	dir string

	wal    *forensics.WALCheck
	walErr error

	db    *dbState
	dbErr error
	// locked says that a running member holds the db.
	locked bool

	unapplied *unapplied

	// peerName is the member's name as another member's db knows it, for
	// a dir whose own db cannot be read.
	peerName string

	// hash is the HashKV at the common revision; hashErr why there is none.
	hash    *store.KVHash
	hashErr error
}

// dbState is what the db file says.
type dbState struct {
	path            string
	consistentIndex uint64
	term            uint64
	revision        int64
	compactRevision int64
	members         []cluster.Member // of the members bucket, by ID

	file  *boltfile.DB
	index *store.OfflineIndex
}

// readMember reads the WAL and the db of dir. The db is left open for the
// HashKV at the common revision; close closes it.
func readMember(dir string) *member {
	m := &member{dir: dir}
	m.wal, m.walErr = forensics.CheckWAL(dir)
	m.db, m.dbErr = readDB(dir)
	m.locked = errors.Is(m.dbErr, boltfile.ErrLocked)
	if m.wal != nil && m.db != nil && m.wal.Commit > m.db.consistentIndex {
		m.unapplied = findUnapplied(m.wal.Dir, m.db.consistentIndex, m.wal.Commit)
	}
	return m
}

func (m *member) close() {
	if m.db != nil && m.db.file != nil {
		m.db.file.Close()
	}
}

// readDB opens the db of dir read-only and reads its raft position,
// revisions and membership.
func readDB(dir string) (*dbState, error) {
	p := filepath.Join(dir, "member", "snap", "db")
	if _, err := os.Stat(p); err != nil {
		return nil, fmt.Errorf("no db: %w", err)
	}
	f, err := boltfile.Open(p, lockTimeout)
	if err != nil {
		return nil, err
	}
	st := &dbState{path: p, file: f}
	err = f.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(store.BucketMeta); mb != nil {
			var err error
			if st.consistentIndex, err = metaUint(mb, store.MetaConsistentIndex); err != nil {
				return err
			}
			if st.term, err = metaUint(mb, store.MetaTerm); err != nil {
				return err
			}
		}
		st.members = readMembers(tx)
		return nil
	})
	if err == nil {
		st.index, err = store.ReadIndex(f)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("db %s: %w", p, err)
	}
	st.revision, st.compactRevision = st.index.Rev(), st.index.CompactRev()
	return st, nil
}

func metaUint(b *bolt.Bucket, key []byte) (uint64, error) {
	v := b.Get(key)
	if v == nil {
		return 0, nil
	}
	n, err := store.DecodeUint64(v)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", key, err)
	}
	return n, nil
}

// readMembers returns the members of the members bucket that decode, not
// those marked removed.
func readMembers(tx *bolt.Tx) []cluster.Member {
	b := tx.Bucket(store.BucketMembers)
	if b == nil {
		return nil
	}
	removed := tx.Bucket(store.BucketMembersRemoved)
	var out []cluster.Member
	b.ForEach(func(k, v []byte) error {
		if removed != nil && removed.Get(k) != nil {
			return nil
		}
		if mem, err := cluster.UnmarshalMember(v); err == nil {
			out = append(out, mem)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b cluster.Member) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// namePeers gives each member whose own db does not name it the name
// that another member's db has for its ID.
func namePeers(ms []*member) {
	known := map[uint64]string{}
	for _, m := range ms {
		if m.db == nil {
			continue
		}
		for _, mem := range m.db.members {
			if mem.Name != "" {
				known[mem.ID] = mem.Name
			}
		}
	}
	for _, m := range ms {
		if id := m.memberID(); id != 0 {
			m.peerName = known[id]
		}
	}
}

// memberID is the ID from the WAL's metadata, 0 when unknown.
func (m *member) memberID() uint64 {
	if m.wal != nil && m.wal.HasMetadata {
		return m.wal.NodeID
	}
	return 0
}

func (m *member) clusterID() uint64 {
	if m.wal != nil && m.wal.HasMetadata {
		return m.wal.ClusterID
	}
	return 0
}

// name is the member's name in its own members bucket, "" when unknown.
func (m *member) name() string {
	if self := m.self(); self != nil && self.Name != "" {
		return self.Name
	}
	return m.peerName
}

// self is the member's own entry in its members bucket.
func (m *member) self() *cluster.Member {
	if m.db == nil {
		return nil
	}
	id := m.memberID()
	for i := range m.db.members {
		if m.db.members[i].ID == id {
			return &m.db.members[i]
		}
	}
	return nil
}

// commit is the WAL's commit index (0 without a WAL).
func (m *member) commit() uint64 {
	if m.wal == nil {
		return 0
	}
	return m.wal.Commit
}

// applied is the db's consistent index (0 without a db).
func (m *member) applied() uint64 {
	if m.db == nil {
		return 0
	}
	return m.db.consistentIndex
}

// reach is how far the member's committed data goes: its db, or its WAL's
// committed entries beyond it, which a restart would apply.
func (m *member) reach() uint64 { return max(m.commit(), m.applied()) }

// revision is the db's revision (0 without a db).
func (m *member) revision() int64 {
	if m.db == nil {
		return 0
	}
	return m.db.revision
}

// damage counts the problems found: in the WAL, a WAL or db that cannot be
// read.
func (m *member) damage() int {
	n := 0
	if m.wal != nil {
		n += len(m.wal.Problems)
	}
	if m.walErr != nil {
		n++
	}
	if m.dbErr != nil && !m.locked {
		n++
	}
	return n
}

// walHealthy says whether the WAL read with no damage.
func (m *member) walHealthy() bool { return m.wal != nil && m.wal.Healthy() }

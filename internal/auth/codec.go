package auth

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/authpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/store"
)

// Reader reads the db's buckets (a pkg/store ReadTx).
type Reader interface {
	Get(bucket, key []byte) ([]byte, bool)
	Range(bucket, start, end []byte, fn func(k, v []byte) bool) error
}

// Writer stages writes in the db's buckets (a pkg/store WriteTx): the
// apply loop's, so that they commit with the entry's consistent index.
type Writer interface {
	Put(bucket, key, value []byte) error
	Delete(bucket, key []byte) error
}

// Values of the auth bucket's authEnabled key, as etcd writes them.
var (
	enabledValue  = []byte{1}
	disabledValue = []byte{0}
)

// state is what the auth buckets hold.
type state struct {
	enabled  bool
	revision uint64
	users    map[string]*authpb.User
	roles    map[string]*authpb.Role
}

// readState decodes the auth buckets.
func readState(r Reader) (*state, error) {
	st := &state{users: map[string]*authpb.User{}, roles: map[string]*authpb.Role{}}
	if v, ok := r.Get(store.BucketAuth, store.AuthEnabledKey); ok {
		st.enabled = len(v) == 1 && v[0] == 1
	}
	if v, ok := r.Get(store.BucketAuth, store.AuthRevisionKey); ok {
		rev, err := store.DecodeUint64(v)
		if err != nil {
			return nil, fmt.Errorf("auth revision: %w", err)
		}
		st.revision = rev
	}
	var err error
	if rerr := r.Range(store.BucketAuthUsers, nil, nil, func(k, v []byte) bool {
		var u *authpb.User
		if u, err = UnmarshalAuthUser(v); err != nil {
			err = fmt.Errorf("user %q: %w", k, err)
			return false
		}
		st.users[string(k)] = u
		return true
	}); rerr != nil {
		return nil, fmt.Errorf("read auth users: %w", rerr)
	}
	if err != nil {
		return nil, err
	}
	if rerr := r.Range(store.BucketAuthRoles, nil, nil, func(k, v []byte) bool {
		var role *authpb.Role
		if role, err = UnmarshalAuthRole(v); err != nil {
			err = fmt.Errorf("role %q: %w", k, err)
			return false
		}
		st.roles[string(k)] = role
		return true
	}); rerr != nil {
		return nil, fmt.Errorf("read auth roles: %w", rerr)
	}
	return st, err
}

// putUser writes a user under its name, encoded as etcd encodes it.
func putUser(w Writer, u *authpb.User) error {
	b, err := proto.Marshal(u)
	if err != nil {
		return fmt.Errorf("encode user %q: %w", u.Name, err)
	}
	return w.Put(store.BucketAuthUsers, u.Name, b)
}

// putRole writes a role under its name, encoded as etcd encodes it.
func putRole(w Writer, r *authpb.Role) error {
	b, err := proto.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode role %q: %w", r.Name, err)
	}
	return w.Put(store.BucketAuthRoles, r.Name, b)
}

func putRevision(w Writer, rev uint64) error {
	return w.Put(store.BucketAuth, store.AuthRevisionKey, store.EncodeUint64(rev))
}

func putEnabled(w Writer, enabled bool) error {
	v := disabledValue
	if enabled {
		v = enabledValue
	}
	return w.Put(store.BucketAuth, store.AuthEnabledKey, v)
}

// UnmarshalAuthUser decodes a value of the authUsers bucket.
func UnmarshalAuthUser(b []byte) (*authpb.User, error) {
	u := new(authpb.User)
	if err := proto.Unmarshal(b, u); err != nil {
		return nil, fmt.Errorf("decode auth user: %w", err)
	}
	return u, nil
}

// UnmarshalAuthRole decodes a value of the authRoles bucket.
func UnmarshalAuthRole(b []byte) (*authpb.Role, error) {
	r := new(authpb.Role)
	if err := proto.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("decode auth role: %w", err)
	}
	return r, nil
}

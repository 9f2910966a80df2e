package forensics

import (
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/kvcodec"
	"github.com/cairnkv/cairn/pkg/store"
)

// The line formats of `dump-db iterate-bucket`: etcd-dump-db's where it
// decodes a bucket, and a decoded form for the buckets it prints raw.

// bucketDecoder renders one entry of a bucket as a line.
type bucketDecoder func(k, v []byte) (string, error)

// bucketDecoders are the --decode renderings, by bucket name.
var bucketDecoders = map[string]bucketDecoder{
	string(store.BucketKey):            decodeKeyEntry,
	string(store.BucketMeta):           decodeMetaEntry,
	string(store.BucketLease):          decodeLeaseEntry,
	string(store.BucketAuth):           decodeAuthEntry,
	string(store.BucketAuthUsers):      decodeAuthUserEntry,
	string(store.BucketAuthRoles):      decodeAuthRoleEntry,
	string(store.BucketMembers):        decodeMemberEntry,
	string(store.BucketMembersRemoved): decodeRemovedMemberEntry,
	string(store.BucketCluster):        decodeClusterEntry,
	string(store.BucketAlarm):          decodeAlarmEntry,
}

// formatBucketEntry renders an entry of bucket: decoded when decode is set
// and the bucket has a decoder, else raw. An entry that does not decode is
// printed raw with the reason, and the error is returned as well.
func formatBucketEntry(bucket string, k, v []byte, decode bool) (string, error) {
	dec, ok := bucketDecoders[bucket]
	if !decode || !ok {
		return rawEntry(k, v), nil
	}
	line, err := dec(k, v)
	if err != nil {
		return fmt.Sprintf("%s (cannot decode: %v)", rawEntry(k, v), err), fmt.Errorf("bucket %s key %q: %w", bucket, k, err)
	}
	return line, nil
}

func rawEntry(k, v []byte) string { return fmt.Sprintf("key=%q, value=%q", k, v) }

// decodeKeyEntry renders a revision and its KeyValue.
func decodeKeyEntry(k, v []byte) (string, error) {
	rev, tomb, err := store.ParseRevisionKey(k)
	if err != nil {
		return "", err
	}
	var kv mvccpb.KeyValue
	if err := kvcodec.Unmarshal(v, &kv); err != nil {
		return "", err
	}
	return fmt.Sprintf("rev={Revision:{Main:%d Sub:%d} tombstone:%t}, value=[key %q | val %q | created %d | mod %d | ver %d]",
		rev.Main, rev.Sub, tomb, kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version), nil
}

// decodeMetaEntry renders the raft position, compaction revisions, conf
// state and storage version.
func decodeMetaEntry(k, v []byte) (string, error) {
	switch string(k) {
	case string(store.MetaConsistentIndex), string(store.MetaTerm):
		n, err := store.DecodeUint64(v)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("key=%q, value=%d", k, n), nil
	case string(store.MetaScheduledCompactRev), string(store.MetaFinishedCompactRev):
		rev, _, err := store.ParseRevisionKey(v)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("key=%q, value={%d %d}", k, rev.Main, rev.Sub), nil
	case string(store.MetaConfState):
		if _, err := cluster.UnmarshalConfState(v); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("key=%q, value=%q", k, v), nil
}

// decodeLeaseEntry renders a lease's ID and TTLs.
func decodeLeaseEntry(k, v []byte) (string, error) {
	if _, err := parseLeaseKey(k); err != nil {
		return "", err
	}
	l, err := store.UnmarshalLeaseRecord(v)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("lease ID=%016x, TTL=%ds, remaining TTL=%ds", l.ID, l.TTL, l.RemainingTTL), nil
}

// decodeAuthEntry renders the auth revision and the enabled flag.
func decodeAuthEntry(k, v []byte) (string, error) {
	switch string(k) {
	case string(store.AuthRevisionKey):
		n, err := store.DecodeUint64(v)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("key=%q, value=%d", k, n), nil
	case string(store.AuthEnabledKey):
		if len(v) != 1 {
			return "", fmt.Errorf("want 1 byte, got %d", len(v))
		}
		return fmt.Sprintf("key=%q, value=%v", k, v), nil
	}
	return rawEntry(k, v), nil
}

// decodeAuthUserEntry renders a user's name, roles and options; never the
// password hash.
func decodeAuthUserEntry(_, v []byte) (string, error) {
	u, err := auth.UnmarshalAuthUser(v)
	if err != nil {
		return "", err
	}
	roles := u.GetRoles()
	if roles == nil {
		roles = []string{}
	}
	opt := ""
	if u.GetOptions().GetNoPassword() {
		opt = "no_password:true"
	}
	return fmt.Sprintf("user=%q, roles=%q, option=%s", u.GetName(), roles, opt), nil
}

// decodeAuthRoleEntry renders a role's name and key permissions.
func decodeAuthRoleEntry(_, v []byte) (string, error) {
	r, err := auth.UnmarshalAuthRole(v)
	if err != nil {
		return "", err
	}
	perms := make([]string, 0, len(r.GetKeyPermission()))
	for _, p := range r.GetKeyPermission() {
		perms = append(perms, permissionText(p))
	}
	return fmt.Sprintf("role=%q, keyPermission=[%s]", r.GetName(), strings.Join(perms, " ")), nil
}

// permissionText renders a permission in protobuf's text format, fields
// with their default value left out.
func permissionText(p *authpb.Permission) string {
	var parts []string
	if p.GetPermType() != authpb.Permission_READ {
		parts = append(parts, "permType:"+p.GetPermType().String())
	}
	if len(p.GetKey()) > 0 {
		parts = append(parts, "key:"+textProtoString(p.GetKey()))
	}
	if len(p.GetRangeEnd()) > 0 {
		parts = append(parts, "range_end:"+textProtoString(p.GetRangeEnd()))
	}
	return strings.Join(parts, " ")
}

// decodeMemberEntry checks a member's JSON and renders it as etcd-dump-db
// does, quoted.
func decodeMemberEntry(k, v []byte) (string, error) {
	if _, err := cluster.ParseMemberKey(k); err != nil {
		return "", err
	}
	if _, err := cluster.UnmarshalMember(v); err != nil {
		return "", err
	}
	return rawEntry(k, v), nil
}

// decodeRemovedMemberEntry checks the ID of a removed member.
func decodeRemovedMemberEntry(k, v []byte) (string, error) {
	if _, err := cluster.ParseMemberKey(k); err != nil {
		return "", err
	}
	return rawEntry(k, v), nil
}

// decodeClusterEntry checks the cluster version and downgrade info.
func decodeClusterEntry(k, v []byte) (string, error) {
	if string(k) == string(store.ClusterDowngrade) {
		if _, err := cluster.UnmarshalDowngrade(v); err != nil {
			return "", err
		}
	}
	return rawEntry(k, v), nil
}

// decodeAlarmEntry renders an alarm: the member that raised it and its type.
func decodeAlarmEntry(k, _ []byte) (string, error) {
	a, err := unmarshalAlarmKey(k)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("alarm=%s, memberID=%016x", a.GetAlarm(), a.GetMemberID()), nil
}

package forensics

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"

	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/versionpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/etcdlog"
	"github.com/cairnkv/cairn/internal/version"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// The storage layouts migrate knows: 3.5 (no storageVersion in the meta
// bucket) to 3.7 (cairn's, etcd 3.7's), which differ in that key only.
var (
	oldestLayout = version.Minor{Major: 3, Minor: 5}
	newestLayout = version.Minor{Major: 3, Minor: 7}
)

func newMigrateCommand() *cobra.Command {
	var dataDir, target string
	var force bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Migrates the data dir of a stopped member to the storage layout of another etcd version",
		Long: `migrate, as etcdutl migrate, rewrites the storage version of a data dir whose member
is stopped for the etcd release given, one minor version at a time (the
storageVersion key of the db's meta bucket: absent for 3.5, "3.6.0", "3.7.0").
A downgrade is refused when the WAL holds entries that the target release does
not know (--force writes the version anyway). For a downgrade, lower the
cluster version first (downgrade enable on the running cluster).`,
		Example: "  cairn migrate --data-dir /var/lib/etcd --target-version 3.6",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return migrate(cmd.ErrOrStderr(), dataDir, target, force)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Path to the etcd data dir")
	cmd.Flags().StringVar(&target, "target-version", "", `Target etcd version to migrate contents of data dir. Minimal value 3.5. Format "X.Y" for example 3.6.`)
	cmd.Flags().BoolVar(&force, "force", false, "Ignore migration failure and forcefully override storage version. Not recommended.")
	cmd.MarkFlagRequired("data-dir")
	cmd.MarkFlagRequired("target-version")
	return cmd
}

// migrate writes the storage version of target into dataDir's db, logging
// each step as etcdutl does (zap's console lines on w).
func migrate(w io.Writer, dataDir, targetArg string, force bool) error {
	log := slog.New(etcdlog.NewHandler(w, etcdlog.Console, slog.LevelInfo))
	if !regexp.MustCompile(`^\d+\.\d+$`).MatchString(targetArg) {
		return cmderr.BadArgs(`wrong target version format, expected "X.Y", got %q`, targetArg)
	}
	target, err := version.ParseMinor(targetArg)
	if err != nil {
		return cmderr.BadArgs(`wrong target version format, expected "X.Y", got %q`, targetArg)
	}
	if target.Less(oldestLayout) {
		return cmderr.BadArgs(`target version %q not supported. Minimal "3.5"`, targetArg)
	}
	path := dbPath(dataDir)
	if _, err := os.Stat(path); err != nil {
		return err
	}
	if newestLayout.Less(target) {
		return fmt.Errorf("cannot create migration plan: version %q is not supported", target.Full())
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: dbLockTimeout})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	current, err := storageVersion(db)
	if err != nil {
		return err
	}
	if current == target {
		log.Info("storage version up-to-date", "storage-version", target.String())
		return nil
	}
	if target.Less(current) {
		walVersion, err := walMinimalVersion(walDir(dataDir))
		if err != nil {
			return fmt.Errorf("failed to read wal: %w", err)
		}
		if target.Less(walVersion) {
			err := fmt.Errorf("cannot downgrade storage, WAL contains newer entries, as the target version (%s) is lower than the version (%s) detected from WAL logs", target.Full(), walVersion.Full())
			if !force {
				return err
			}
			log.Warn("ignoring the failed migration (--force)", "error", err.Error())
		}
	}
	for v := current; v != target; {
		if v.Less(target) {
			v.Minor++
		} else {
			v.Minor--
		}
		if err := setStorageVersion(db, v); err != nil {
			return err
		}
		log.Info("updated storage version", "new-storage-version", v.Full())
	}
	return nil
}

// storageVersion reads the db's storage version: 3.5 when it has none.
func storageVersion(db *bolt.DB) (version.Minor, error) {
	v := oldestLayout
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		if b == nil {
			return fmt.Errorf("the db has no %s bucket", store.BucketMeta)
		}
		raw := b.Get(store.MetaStorageVersion)
		if raw == nil {
			return nil
		}
		var err error
		if v, err = version.ParseMinor(string(raw)); err != nil || newestLayout.Less(v) {
			return fmt.Errorf("cannot create migration plan: version %q is not supported", raw)
		}
		return nil
	})
	return v, err
}

// setStorageVersion writes v as the db's storage version; 3.5's layout has
// none.
func setStorageVersion(db *bolt.DB, v version.Minor) error {
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		if v == oldestLayout {
			return b.Delete(store.MetaStorageVersion)
		}
		return b.Put(store.MetaStorageVersion, []byte(v.Full()))
	})
}

// walMinimalVersion is the oldest etcd release that knows every entry of
// the WAL in dir: for each request, the newest version etcd's API
// annotates among the messages, fields and enum values it uses.
func walMinimalVersion(dir string) (version.Minor, error) {
	newest := version.Minor{Major: 3}
	d, err := walfmt.OpenDecoder(dir, walfmt.DecoderOptions{})
	if err != nil {
		return newest, err
	}
	defer d.Close()
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			return newest, nil
		}
		var damage *walfmt.Error
		if errors.As(err, &damage) {
			continue // a torn or damaged record: etcd's own reader stops there too
		} else if err != nil {
			return newest, err
		}
		e := it.Entry
		if e == nil || e.GetType() != raftpb.EntryType_EntryNormal || len(e.GetData()) == 0 {
			continue
		}
		req := new(etcdserverpb.InternalRaftRequest)
		if proto.Unmarshal(e.GetData(), req) != nil {
			continue // a v2 request, older than any annotation
		}
		if v := messageVersion(req.ProtoReflect()); newest.Less(v) {
			newest = v
		}
	}
}

// messageVersion is the newest version annotated on m's message type, the
// fields set in it and their values, recursively.
func messageVersion(m protoreflect.Message) version.Minor {
	newest := annotated(m.Descriptor().Options(), versionpb.E_EtcdVersionMsg)
	if r, ok := m.Interface().(*etcdserverpb.DowngradeVersionTestRequest); ok {
		if v, err := version.ParseMinor(r.GetVer()); err == nil && newest.Less(v) {
			newest = v // the test request stands for an entry of its version
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		for _, v := range fieldVersions(fd, val) {
			if newest.Less(v) {
				newest = v
			}
		}
		return true
	})
	return newest
}

func fieldVersions(fd protoreflect.FieldDescriptor, val protoreflect.Value) []version.Minor {
	vs := []version.Minor{annotated(fd.Options(), versionpb.E_EtcdVersionField)}
	value := func(v protoreflect.Value) {
		switch fd.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			vs = append(vs, messageVersion(v.Message()))
		case protoreflect.EnumKind:
			vs = append(vs, annotated(fd.Enum().Options(), versionpb.E_EtcdVersionEnum))
			if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
				vs = append(vs, annotated(ev.Options(), versionpb.E_EtcdVersionEnumValue))
			}
		}
	}
	switch {
	case fd.IsList():
		for i := 0; i < val.List().Len(); i++ {
			value(val.List().Get(i))
		}
	case fd.IsMap():
		val.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				vs = append(vs, messageVersion(v.Message()))
			}
			return true
		})
	default:
		value(val)
	}
	return vs
}

// annotated reads a version annotation ("3.5") of etcd's API from opts;
// 3.0 when there is none.
func annotated(opts protoreflect.ProtoMessage, ext protoreflect.ExtensionType) version.Minor {
	if s, ok := proto.GetExtension(opts, ext).(string); ok {
		if v, err := version.ParseMinor(s); err == nil {
			return v
		}
	}
	return version.Minor{Major: 3}
}

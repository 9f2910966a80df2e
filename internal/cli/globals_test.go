package cli

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

func TestEndpointsFromEnvironment(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		flags []string
		want  []string
	}{
		{"default", nil, nil, []string{"127.0.0.1:2379"}},
		{"etcdctl variable", map[string]string{"ETCDCTL_ENDPOINTS": "a:1,b:2"}, nil, []string{"a:1", "b:2"}},
		{"cairn variable wins", map[string]string{"ETCDCTL_ENDPOINTS": "a:1", "CAIRN_ENDPOINTS": "c:3"}, nil, []string{"c:3"}},
		{"flag wins", map[string]string{"CAIRN_ENDPOINTS": "c:3"}, []string{"--endpoints=d:4,e:5"}, []string{"d:4", "e:5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			root := &cobra.Command{Use: "cairn"}
			g := addGlobalFlags(root)
			if err := root.ParseFlags(tt.flags); err != nil {
				t.Fatal(err)
			}
			if got := g.endpoints(); !slices.Equal(got, tt.want) {
				t.Fatalf("endpoints = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDurationAndFormatFromEnvironment(t *testing.T) {
	t.Setenv("ETCDCTL_COMMAND_TIMEOUT", "9s")
	t.Setenv("ETCDCTL_WRITE_OUT", "yaml")
	root := &cobra.Command{Use: "cairn"}
	g := addGlobalFlags(root)
	if got := g.commandTimeout().String(); got != "9s" {
		t.Fatalf("command timeout = %s, want 9s", got)
	}
	if err := g.validateOutputFormat(); cmderr.ExitCode(err) != cmderr.ExitBadFeature {
		t.Fatalf("unknown format from the environment: error %v, want exit %d", err, cmderr.ExitBadFeature)
	}
}

package client_test

import (
	"os"
	"testing"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	clienttest.RemoveBuilds()
	os.Exit(code)
}

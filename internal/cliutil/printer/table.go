package printer

import (
	"fmt"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// The table format of each result: a header and rows, drawn with box
// characters, cells aligned right.

// printTable draws a table.
func (p *Printer) printTable(header []string, rows [][]string) error {
	t := tablewriter.NewTable(p.w, tablewriter.WithRowAlignment(tw.AlignRight))
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

func (r *MemberListResult) TableRows(*Printer) ([]string, [][]string) {
	header := []string{"ID", "Status", "Name", "Peer Addrs", "Client Addrs", "Is Learner"}
	var rows [][]string
	for _, m := range r.Resp.GetMembers() {
		rows = append(rows, []string{fmt.Sprintf("%x", m.GetID()), memberStatus(m), m.GetName(),
			strings.Join(m.GetPeerURLs(), ","), strings.Join(m.GetClientURLs(), ","), fmt.Sprint(m.GetIsLearner())})
	}
	return header, rows
}

func (r *EndpointHealthResult) TableRows(*Printer) ([]string, [][]string) {
	var rows [][]string
	for _, h := range r.Health {
		rows = append(rows, []string{h.Endpoint, fmt.Sprint(h.Health), h.Took, h.Error})
	}
	return []string{"endpoint", "health", "took", "error"}, rows
}

func (r *EndpointStatusResult) TableRows(*Printer) ([]string, [][]string) {
	header := []string{"endpoint", "ID", "version", "storage version", "db size", "in use", "percentage not in use", "quota",
		"is leader", "is learner", "raft term", "raft index", "raft applied index", "errors",
		"downgrade target version", "downgrade enabled"}
	var rows [][]string
	for _, s := range r.Statuses {
		rows = append(rows, statusRow(s))
	}
	return header, rows
}

func (r *EndpointHashKVResult) TableRows(*Printer) ([]string, [][]string) {
	var rows [][]string
	for _, h := range r.Hashes {
		rows = append(rows, []string{h.Endpoint, fmt.Sprint(h.HashKV.GetHash()), fmt.Sprint(h.HashKV.GetHashRevision())})
	}
	return []string{"endpoint", "hash", "hash revision"}, rows
}

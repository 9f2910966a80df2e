package cli

// Results that print the same way in every format.

func (m message) printAnyFormat(p *printer) error {
	p.line(string(m))
	return nil
}

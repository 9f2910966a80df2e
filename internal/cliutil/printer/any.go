package printer

// Results that print the same way in every format.

func (m Message) printAnyFormat(p *Printer) error {
	p.Line(string(m))
	return nil
}

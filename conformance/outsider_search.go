package conformance

// searchCandidates lists the derived traces the run's observations
// allow.
func searchCandidates(run *OutsiderRun) ([]Derived, error) {
	d, err := Derive(run)
	if err != nil {
		return nil, err
	}
	return []Derived{d}, nil
}

// searchAudit replays the candidates in turn and returns the first that
// conforms, else the first candidate's report.
func searchAudit(cands []Derived, opts Options) (OutsiderReport, error) {
	var first OutsiderReport
	for i, d := range cands {
		r := auditDerived(d, opts)
		if r.OK() || i == 0 {
			first = r
		}
		if r.OK() {
			return r, nil
		}
	}
	return first, nil
}

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

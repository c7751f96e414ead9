package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// proxyToxics is the mechanism of the store fault proxy: toxics on the links between
// candidates and their store. It remembers every link it added one to; its sweep removes
// whatever toxic of the nemesis is still listed on them.
type proxyToxics struct {
	*live
	links nameSet
}

func newProxyToxics(l *live) *proxyToxics { return &proxyToxics{live: l} }

// add adds toxics to every store link of the fault's target candidates; the heal
// removes them and checks the proxy no longer lists them.
func (x *proxyToxics) add(ctx context.Context, pf PlannedFault, toxics []Toxic) (*applied, error) {
	px := x.storeProxy()
	if px == nil {
		return nil, fmt.Errorf("%s needs the store fault proxy, and this run's candidates connect to the store directly (the run starts the proxy only when the plan has a %s fault)", pf.Kind, pf.Kind)
	}
	names, err := x.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	type added struct{ link, toxic string }
	var done []added
	heal := func(ctx context.Context) error {
		var errs []error
		links := map[string]bool{}
		for _, a := range done {
			links[a.link] = true
			if err := px.RemoveToxic(ctx, a.link, a.toxic); err != nil {
				errs = append(errs, fmt.Errorf("remove %s from %s: %w", a.toxic, a.link, err))
			}
		}
		for link := range links {
			listed, err := px.ToxicNames(ctx, link)
			if err != nil {
				errs = append(errs, fmt.Errorf("list toxics of %s: %w", link, err))
				continue
			}
			for _, a := range done {
				if a.link == link && slices.Contains(listed, a.toxic) {
					errs = append(errs, fmt.Errorf("%s still listed on %s after removal", a.toxic, link))
				}
			}
		}
		return errors.Join(errs...)
	}
	ap := &applied{targets: names, heal: heal}
	for _, name := range names {
		if !x.isCandidate(name) {
			return ap, fmt.Errorf("%s: %s hits candidates only (their store connections)", name, pf.Kind)
		}
		links := px.Links(name)
		if len(links) == 0 {
			return ap, fmt.Errorf("%s: the store proxy has no links for this candidate", name)
		}
		for _, link := range links {
			x.links.add(link)
			for _, t := range toxics {
				if err := px.AddToxic(ctx, link, t); err != nil {
					return ap, fmt.Errorf("%s: add %s to %s: %w", name, t.Name, link, err)
				}
				done = append(done, added{link, t.Name})
			}
		}
	}
	return ap, nil
}

func (x *proxyToxics) storeProxy() StoreProxy {
	if e, ok := x.env.(StoreProxyEnv); ok {
		return e.StoreProxy()
	}
	return nil
}

// sweep removes every toxic of the nemesis from the links it touched and checks the listing.
func (x *proxyToxics) sweep(ctx context.Context) []error {
	px := x.storeProxy()
	links := x.links.list()
	if px == nil || len(links) == 0 {
		return nil
	}
	var errs []error
	for _, link := range links {
		listed, err := px.ToxicNames(ctx, link)
		if err != nil {
			errs = append(errs, fmt.Errorf("heal proxy link %s: %w", link, err))
			continue
		}
		left := false
		for _, name := range listed {
			if strings.HasPrefix(name, proxyToxicPrefix) {
				if err := px.RemoveToxic(ctx, link, name); err != nil {
					errs = append(errs, fmt.Errorf("heal proxy link %s: remove %s: %w", link, name, err))
					left = true
				}
			}
		}
		if !left {
			x.links.remove(link)
		}
	}
	return errs
}

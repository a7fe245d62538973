// Package stores is the list of the stores tollgate hears, one file per store: each is one
// value saying its name, whether the configuration turns it on, and its adapter as the
// configuration sets it up. The binary learns every store from this
// list (All), so a new store is a new package and one entry here.
package stores

import (
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/config"
)

// Store is one store as the binary knows it.
type Store struct {
	// Name is the provider's name: its webhook route's last segment, the key of its rows.
	Name string
	// On says whether the configuration turns it on.
	On func(config.Config) bool
	// Adapter is its adapter as the configuration sets it up.
	Adapter func(config.Config) (billing.Adapter, error)
	// TestEvents are its part in "webhook send".
	TestEvents TestEvents
}

// All are the stores tollgate can hear, in the order they are listed everywhere.
func All() []Store { return []Store{web, mobile, appStore, playStore} }

// Names are every store's name, for the flags that take one.
func Names() []string {
	var names []string
	for _, s := range All() {
		names = append(names, s.Name)
	}
	return names
}

// Adapters are the adapters of the stores cfg turns on.
func Adapters(cfg config.Config) ([]billing.Adapter, error) {
	var list []billing.Adapter
	for _, s := range All() {
		if !s.On(cfg) {
			continue
		}
		a, err := s.Adapter(cfg)
		if err != nil {
			return nil, err
		}
		list = append(list, a)
	}
	return list, nil
}

func always(config.Config) bool { return true }

package stores

import (
	"context"
	"fmt"
	"os"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/playstore"
	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
	"github.com/tollgate/tollgate/internal/config"
)

// playStore is Google Play, heard directly when PLAY_PACKAGE_NAME is set (or through the
// development stand-in).
var playStore = Store{Name: billing.ProviderPlayStore,
	On: func(cfg config.Config) bool { return cfg.PlayStore.PackageName != "" }, Adapter: playStoreAdapter}

// playStoreAdapter is Google Play's adapter, with the service account key of
// PLAY_SERVICE_ACCOUNT_JSON, or one for the development stand-in.
func playStoreAdapter(cfg config.Config) (billing.Adapter, error) {
	play := cfg.PlayStore
	var key []byte
	var err error
	if play.Dev {
		key, err = playdev.ServiceAccountJSON(play.APIBase) // the stand-in grants any
	} else if key, err = os.ReadFile(play.ServiceAccountJSON); err != nil {
		err = fmt.Errorf("PLAY_SERVICE_ACCOUNT_JSON: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return playstore.New(context.Background(), playstore.Config{
		PackageName: play.PackageName, PushAudience: play.PushAudience, PushServiceAccount: play.PushServiceAccount,
		PushJWKSURL: play.PushJWKSURL, ServiceAccountJSON: key, APIBase: play.APIBase,
	})
}

package billing

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A kind survives wrapping; an error of no kind is a failure, and so is a provider's.
func TestKindsSayWhatAnErrorIs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		kind   Kind
		answer bool
	}{
		{"a limit", ErrLimitExceeded, KindRefused, true},
		{"a wrapped unverified purchase", fmt.Errorf("%w: no signed_transaction", ErrUnverifiedPurchase), KindInvalid, true},
		{"an invalid event", Invalidf("no id"), KindInvalid, true},
		{"an unresolved customer", NewUnresolved("unresolved customer", "customer", "cus_1"), KindUnresolved, true},
		{"a body that is not JSON", BadJSON(errors.New("malformed JSON")), KindInvalid, true},
		{"a signature", ErrSignatureMismatch, KindRefused, true},
		{"no checkout", ErrCheckoutUnavailable, KindUnconfigured, true},
		{"a provider that failed", &ProviderError{Status: 500}, KindProviderFailed, false},
		{"the database", context.DeadlineExceeded, "", false},
		{"nothing", nil, "", false},
	} {
		if got := KindOf(tc.err); got != tc.kind {
			t.Errorf("%s: kind %q, want %q", tc.name, got, tc.kind)
		}
		if got := IsAnswer(tc.err); got != tc.answer {
			t.Errorf("%s: IsAnswer %t, want %t", tc.name, got, tc.answer)
		}
	}
	if e := AsError(fmt.Errorf("checkout: %w", ErrAlreadySubscribed)); e == nil || e.Code != "already-subscribed" || e.Detail == "" {
		t.Errorf("AsError through a wrap: %+v", e)
	}
}

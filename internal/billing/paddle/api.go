package paddle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	paddlesdk "github.com/PaddleHQ/paddle-go-sdk/v4"
	"github.com/PaddleHQ/paddle-go-sdk/v4/pkg/paddleerr"

	"github.com/tollgate/tollgate/internal/billing"
)

// APIConfig is Paddle's API as tollgate calls it.
type APIConfig struct {
	Key, Base string
	// CheckoutOrigins are where the account's default payment link may be: the app's own
	// origins, which a form that starts a checkout is let go to.
	CheckoutOrigins []string
	// Client defaults to one with a 30 s timeout; Attempts (8) bounds the tries of a read
	// that Paddle rate-limits (429) or fails (5xx); FirstWait (1 s) is the first wait.
	Client    *http.Client
	Attempts  int
	FirstWait time.Duration
}

// API reads subscriptions and makes checkouts and portal sessions. The official SDK makes
// the sessions; the subscriptions are read here, page by page, because the SDK neither
// retries a rate-limited read nor hands back one page and its cursor (it reads on), and a
// reconcile pass resumes at a cursor.
type API struct {
	cfg APIConfig
	sdk *paddlesdk.SDK
}

// NewAPI is Paddle's API at cfg.Base with cfg.Key.
func NewAPI(cfg APIConfig) (*API, error) {
	if cfg.Key == "" || cfg.Base == "" {
		return nil, errors.New("Paddle's API needs its key and its base URL")
	}
	cfg.Base = strings.TrimRight(cfg.Base, "/")
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 8
	}
	if cfg.FirstWait <= 0 {
		cfg.FirstWait = time.Second
	}
	base, err := url.Parse(cfg.Base)
	if err != nil {
		return nil, err
	}
	sdk, err := paddlesdk.New(cfg.Key, paddlesdk.WithBaseURL(cfg.Base), paddlesdk.WithClient(under{cfg.Client, strings.TrimRight(base.Path, "/")}))
	if err != nil {
		return nil, err
	}
	return &API{cfg: cfg, sdk: sdk}, nil
}

// under sends the SDK's requests under the base URL's path: the SDK keeps only the base's
// scheme and host, and a stand-in (the development one, under /_dev/paddle) has a path.
type under struct {
	client *http.Client
	path   string
}

func (u under) Do(req *http.Request) (*http.Response, error) {
	if u.path != "" {
		req.URL.Path = u.path + req.URL.Path
		req.URL.RawPath = ""
	}
	return u.client.Do(req)
}

// Page is one page of subscriptions as Paddle's API sent them.
type Page struct {
	Subscriptions []json.RawMessage
	// Next is the cursor of the page after (the last subscription's id); HasMore says
	// whether there is one.
	Next    string
	HasMore bool
}

// Subscriptions reads the page of subscriptions after the subscription after ("" for
// the first), of customer when set, 200 at a time.
func (a *API) Subscriptions(ctx context.Context, customer, after string) (Page, error) {
	q := url.Values{"per_page": {"200"}, "order_by": {"id[ASC]"}}
	if after != "" {
		q.Set("after", after)
	}
	if customer != "" {
		q.Set("customer_id", customer)
	}
	var body struct {
		Data []json.RawMessage `json:"data"`
		Meta struct {
			Pagination struct {
				Next    string `json:"next"`
				HasMore bool   `json:"has_more"`
			} `json:"pagination"`
		} `json:"meta"`
	}
	if err := a.get(ctx, "/subscriptions?"+q.Encode(), &body); err != nil {
		return Page{}, err
	}
	page := Page{Subscriptions: body.Data, HasMore: body.Meta.Pagination.HasMore}
	if len(body.Data) > 0 {
		var last struct {
			ID string `json:"id"`
		}
		json.Unmarshal(body.Data[len(body.Data)-1], &last)
		page.Next = last.ID
	}
	if page.HasMore && page.Next == "" {
		return Page{}, errors.New("Paddle said there are more subscriptions after a page of none")
	}
	return page, nil
}

// get reads path, trying again after a 429 (when Retry-After says, else backing off) or a
// 5xx, up to the configured attempts.
func (a *API) get(ctx context.Context, path string, into any) error {
	wait := a.cfg.FirstWait
	for attempt := 1; ; attempt++ {
		retry, err := a.getOnce(ctx, path, into)
		if err == nil || retry <= 0 || attempt >= a.cfg.Attempts {
			return err
		}
		pause := max(wait, retry)
		wait = min(2*wait, 30*time.Second)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(pause, 30*time.Second)):
		}
	}
}

func (a *API) getOnce(ctx context.Context, path string, into any) (retry time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.Base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.Key)
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		return time.Nanosecond, &Error{Message: "no answer"}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	switch {
	case err != nil:
		return time.Nanosecond, &Error{Message: "the answer was cut short"}
	case resp.StatusCode == http.StatusTooManyRequests:
		seconds, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return max(time.Duration(seconds)*time.Second, time.Nanosecond), &Error{Status: resp.StatusCode}
	case resp.StatusCode >= 500:
		return time.Nanosecond, &Error{Status: resp.StatusCode}
	case resp.StatusCode != http.StatusOK:
		return 0, &Error{Status: resp.StatusCode, Message: errorCode(raw)}
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return 0, &Error{Status: resp.StatusCode, Message: "the answer is not Paddle's JSON"}
	}
	return 0, nil
}

// Error is a failed call to Paddle's API, without the key or the body.
type Error struct {
	Status  int // 0: no answer
	Message string
}

func (e *Error) Error() string {
	switch e.Status {
	case 0:
		return "Paddle's API: " + e.Message
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("Paddle's API refused PADDLE_API_KEY (%d): %s", e.Status, e.Message)
	}
	return fmt.Sprintf("Paddle's API: %d %s", e.Status, e.Message)
}

// HTTPStatus is the status Paddle answered, as billing.StatusOf reads it.
func (e *Error) HTTPStatus() int { return e.Status }

// Unwrap: a refused key is billing.ErrAPIRefused, which ends a reconcile pass.
func (e *Error) Unwrap() error {
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		return billing.ErrAPIRefused
	}
	return nil
}

// errorCode is Paddle's error code from an error answer ({"error":{"code":…}}), never
// its detail, which may echo what was sent.
func errorCode(raw []byte) string {
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(raw, &body)
	return body.Error.Code
}

// sdkStatus is the HTTP status of an error the SDK gave.
func sdkStatus(err error) int {
	var e *paddleerr.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

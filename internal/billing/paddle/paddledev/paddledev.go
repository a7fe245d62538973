// Package paddledev stands in for Paddle's API, in development (serve mounts it at
// /_dev/paddle when PADDLE_WEBHOOK_SECRET is set without PADDLE_API_KEY) and in tests: the
// subscriptions it is told of are listed page by page as GET /subscriptions lists them,
// and transactions and customer portal sessions are made with URLs of its own.
package paddledev

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Paddle is the stand-in. Its zero value is not usable: use New.
type Paddle struct {
	mu   sync.Mutex
	subs map[string]json.RawMessage
	// Transactions are the transactions made, in order (for tests to read).
	transactions []Transaction
	// base is where the stand-in is reached, for the URLs it makes.
	base  string
	reads int
	// MaxPerPage caps a page, as Paddle caps it at 200: tests set less, to read several.
	MaxPerPage int
	// save, when set, is given the subscriptions held after each change (Keep).
	save func(state []byte)
}

// Keep has the stand-in start from the subscriptions saved holds (as save was given them
// by an earlier stand-in) and give save what it holds after every change: a development
// server restarted still lists every subscription it was told. save runs while the
// stand-in is locked, so it must not call back into it.
func (p *Paddle) Keep(saved []byte, save func(state []byte)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(saved) > 0 {
		if err := json.Unmarshal(saved, &p.subs); err != nil {
			return fmt.Errorf("the Paddle stand-in's saved state: %w", err)
		}
	}
	p.save = save
	return nil
}

// Transaction is a transaction POST /transactions made.
type Transaction struct {
	ID         string            `json:"id"`
	PriceID    string            `json:"price_id"`
	CustomerID string            `json:"customer_id,omitempty"`
	CustomData map[string]string `json:"custom_data"`
}

// New is a stand-in reached at base (its URLs begin there).
func New(base string) *Paddle {
	return &Paddle{subs: map[string]json.RawMessage{}, base: strings.TrimRight(base, "/")}
}

// Put tells the stand-in a subscription's state, as GET /subscriptions will list it.
func (p *Paddle) Put(subscription json.RawMessage) error {
	var sub struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(subscription, &sub); err != nil || !strings.HasPrefix(sub.ID, "sub_") {
		return fmt.Errorf("a subscription needs its id (sub_…)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subs[sub.ID] = subscription
	if p.save != nil {
		if state, err := json.Marshal(p.subs); err == nil {
			p.save(state)
		}
	}
	return nil
}

// Transactions are the transactions made so far.
func (p *Paddle) Transactions() []Transaction {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.transactions)
}

// Reads counts the pages of subscriptions read.
func (p *Paddle) Reads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

// Handler serves the part of Paddle's API tollgate calls, and PUT /subscriptions/{id} for
// telling it a subscription. Every call needs a bearer key, as Paddle's do.
func (p *Paddle) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /subscriptions", p.list)
	mux.HandleFunc("PUT /subscriptions/{id}", p.put)
	mux.HandleFunc("POST /transactions", p.transaction)
	mux.HandleFunc("POST /customers/{id}/portal-sessions", p.portal)
	mux.HandleFunc("GET /checkout", page("the checkout of transaction", "_ptxn"))
	mux.HandleFunc("GET /portal/{id}", page("the customer portal of", "id"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		browsing := r.Method == http.MethodGet && (r.URL.Path == "/checkout" || strings.HasPrefix(r.URL.Path, "/portal/"))
		if !browsing && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			answer(w, http.StatusForbidden, map[string]any{"error": map[string]string{"type": "request_error", "code": "forbidden"}})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (p *Paddle) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage <= 0 {
		perPage = 50
	}
	p.mu.Lock()
	perPage = min(perPage, cmp.Or(p.MaxPerPage, 200))
	p.reads++
	var ids []string
	for id, raw := range p.subs {
		if customer := q.Get("customer_id"); customer == "" || strings.Contains(string(raw), `"customer_id":"`+customer+`"`) || strings.Contains(string(raw), `"customer_id": "`+customer+`"`) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if after := q.Get("after"); after != "" {
		i, _ := slices.BinarySearch(ids, after)
		for i < len(ids) && ids[i] <= after {
			i++
		}
		ids = ids[i:]
	}
	page := ids[:min(perPage, len(ids))]
	data := make([]json.RawMessage, 0, len(page))
	for _, id := range page {
		data = append(data, p.subs[id])
	}
	p.mu.Unlock()
	more := len(ids) > len(page)
	next := ""
	if len(page) > 0 {
		next = p.base + "/subscriptions?after=" + page[len(page)-1] + "&per_page=" + strconv.Itoa(perPage)
	}
	answer(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]any{"request_id": "dev",
		"pagination": map[string]any{"per_page": perPage, "next": next, "has_more": more, "estimated_total": len(ids)}}})
}

func (p *Paddle) put(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&raw); err != nil || p.Put(raw) != nil {
		answer(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"type": "request_error", "code": "bad_request"}})
		return
	}
	answer(w, http.StatusOK, map[string]any{"data": raw})
}

func (p *Paddle) transaction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Items []struct {
			PriceID string `json:"price_id"`
		} `json:"items"`
		CustomerID string            `json:"customer_id"`
		CustomData map[string]string `json:"custom_data"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil || len(in.Items) != 1 || in.Items[0].PriceID == "" {
		answer(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"type": "request_error", "code": "bad_request"}})
		return
	}
	p.mu.Lock()
	txn := Transaction{ID: fmt.Sprintf("txn_dev%020d", len(p.transactions)+1), PriceID: in.Items[0].PriceID, CustomerID: in.CustomerID, CustomData: in.CustomData}
	p.transactions = append(p.transactions, txn)
	p.mu.Unlock()
	answer(w, http.StatusCreated, map[string]any{"data": map[string]any{
		"id": txn.ID, "status": "ready", "customer_id": nullable(in.CustomerID), "custom_data": in.CustomData,
		"items":    []map[string]any{{"price_id": txn.PriceID, "quantity": 1}},
		"checkout": map[string]any{"url": p.base + "/checkout?_ptxn=" + txn.ID}, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
	}})
}

func (p *Paddle) portal(w http.ResponseWriter, r *http.Request) {
	customer := r.PathValue("id")
	answer(w, http.StatusCreated, map[string]any{"data": map[string]any{
		"id": "cpls_dev", "customer_id": customer, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"urls": map[string]any{"general": map[string]string{"overview": p.base + "/portal/" + customer}, "subscriptions": []any{}},
	}})
}

// page is where the stand-in's checkout and portal URLs lead a browser: a line saying
// what Paddle would show there.
func page(what, param string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := cmp.Or(r.PathValue(param), r.URL.Query().Get(param))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "Development stand-in for Paddle: here Paddle would show %s %s. Nothing is charged; send the notifications with tollgate webhook send --provider paddle.\n", what, id)
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

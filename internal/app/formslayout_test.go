package app

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// lineBreaksJS lists where the text of the element sel wraps: for each break, the
// characters either side of it ("a|b").
const lineBreaksJS = `(() => {
	const el = document.querySelector(%q), walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), chars = [];
	for (let n; (n = walker.nextNode());) for (let i = 0; i < n.length; i++) {
		const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
		chars.push([n.data[i], r.getBoundingClientRect().top]);
	}
	const breaks = [];
	for (let i = 1; i < chars.length; i++) if (chars[i][1] > chars[i - 1][1] + 2) breaks.push(chars[i - 1][0] + "|" + chars[i][0]);
	return breaks.join(" ");
})()`

// At 390 px a long e-mail address on the account page wraps before its @ or after a dot
// (or a hyphen, as any text does), never mid-word; an address that fits on a line is never
// broken, though the sentence around it wraps.
func TestBrowserLongEmailWrapsAtItsParts(t *testing.T) {
	t.Parallel() // its own server and browser; browser lets two run at once
	ctx := browser(t)
	env := testEnv(t, map[string]string{"APP_ENV": "development"})
	startServe(t, env)
	base := env["PUBLIC_URL"]
	const email = "firstname.lastname.department@accounts.subdomain.example-company.test"
	tab := newTab(t, ctx, base)
	tab.run("sign up on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/registration/new"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), email), chromedp.SendKeys(chromedp.CSS("#password"), "a-good-password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("dl.account")), screenshot("long-email-account-390"))
	defer tab.run("back to the desktop", chromedp.EmulateViewport(1280, 800))
	breaks := tab.eval(strings.Replace(lineBreaksJS, "%q", `"dl.account dd"`, 1))
	if breaks == "" {
		t.Fatalf("the address did not wrap at 390 px: the test proves nothing")
	}
	for _, b := range strings.Fields(breaks) {
		if !strings.HasPrefix(b, ".|") && !strings.HasPrefix(b, "-|") && !strings.HasSuffix(b, "|@") {
			t.Errorf("the address wraps mid-word at %q (breaks: %s)", b, breaks)
		}
	}

	const fits = "someone.surname@example.test"
	tab.run("the code form on a phone", chromedp.Navigate(base+"/otp/verify?type=email&email="+fits),
		chromedp.WaitVisible(chromedp.CSS(".hint .address")), screenshot("email-in-a-sentence-390"))
	if sentence := tab.eval(strings.Replace(lineBreaksJS, "%q", `".hint"`, 1)); sentence == "" {
		t.Fatalf("the sentence did not wrap at 390 px: the test proves nothing")
	}
	if inside := tab.eval(strings.Replace(lineBreaksJS, "%q", `".hint .address"`, 1)); inside != "" {
		t.Errorf("an address that fits on a line is broken at %s", inside)
	}
}

// The identity service reports a failed link in the URL's fragment (#error=…&error_code=…),
// which the browser keeps across our redirect to the page that says so. Once that page is
// shown, the fragment has told all it had to: take it out of the address bar, so that it
// is neither bookmarked nor shared.
if (/(^#|&)error(_code)?=/.test(window.location.hash)) {
  history.replaceState(null, "", window.location.pathname + window.location.search);
}

// Client-side check only: the server does not read password_confirmation.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form[data-confirm-password]").forEach(function (form) {
    var password = form.querySelector("#password");
    var confirmation = form.querySelector("#password_confirmation");
    function check() {
      confirmation.setCustomValidity(confirmation.value === password.value ? "" : "The passwords do not match.");
    }
    password.addEventListener("input", check);
    confirmation.addEventListener("input", check);
  });
});

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

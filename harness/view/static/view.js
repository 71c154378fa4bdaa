// Live pages (those whose body carries data-version) reload when the index moves on: an audit that is
// still running appends records, and the headline and cell pages follow it. Pages are whole without
// this script; it only keeps them current.
(function () {
  "use strict";
  var body = document.body;
  if (!body || !body.dataset.version) return;
  var shown = body.dataset.version;
  var badge = document.getElementById("live");
  if (badge) { badge.hidden = false; badge.textContent = "live"; }
  function poll() {
    fetch("/api/version", { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (v) {
        if (!v) return;
        if (badge) { badge.hidden = false; badge.textContent = v.torn ? "live · a run is being written" : "live"; }
        if (String(v.version) !== shown) { window.location.reload(); }
      })
      .catch(function () { if (badge) { badge.hidden = false; badge.textContent = "view stopped"; } })
      .finally(function () { window.setTimeout(poll, 2000); });
  }
  window.setTimeout(poll, 2000);
})();

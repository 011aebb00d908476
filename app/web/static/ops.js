// The operations page refreshes its live part in place every few seconds,
// with a button to pause (a full-page meta refresh would steal focus and
// cannot be paused).
(function () {
  "use strict";
  var live = document.getElementById("ops-live");
  var toggle = document.getElementById("refresh-toggle");
  var status = document.getElementById("refresh-status");
  if (!live || !toggle || !status) return;
  var every = Number(live.getAttribute("data-refresh") || 5) * 1000;
  var paused = false;
  toggle.addEventListener("click", function () {
    paused = !paused;
    toggle.textContent = paused ? "Resume auto-refresh" : "Pause auto-refresh";
    toggle.setAttribute("aria-pressed", String(paused));
  });
  function tick() {
    if (paused) { setTimeout(tick, every); return; }
    fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (reply) {
        if (!reply.ok) throw new Error("status " + reply.status);
        return reply.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("ops-live");
        var current = document.getElementById("ops-live");
        if (fresh && current) current.replaceWith(document.importNode(fresh, true));
        status.textContent = "Updated " + new Date().toLocaleTimeString();
      })
      .catch(function (err) { status.textContent = "Refresh failed (" + err.message + "); retrying"; })
      .then(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();

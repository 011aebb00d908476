// The file page's n and p keys: the next and the previous run of missed or
// partial lines (rows marked data-stop, in page order); past the first or
// the last, the page's link beyond its lines (a[data-lead]). The links in
// each such row do the same without JavaScript.
(function () {
  "use strict";
  function stops() {
    return Array.prototype.slice.call(document.querySelectorAll("tr[data-stop]"));
  }
  function current(rows) {
    var id = decodeURIComponent(location.hash.slice(1));
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].id === id) return i;
    }
    var target = id && document.getElementById(id);
    if (target) {  // a line that is not a stop: the stops around it
      for (var j = 0; j < rows.length; j++) {
        if (target.compareDocumentPosition(rows[j]) & Node.DOCUMENT_POSITION_FOLLOWING) return j - 0.5;
      }
      return rows.length - 0.5;
    }
    return -1;
  }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
    var tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (event.target && event.target.isContentEditable)) return;
    if (event.key !== "n" && event.key !== "p") return;
    var rows = stops();
    var at = current(rows);
    var next = event.key === "n" ? Math.floor(at) + 1 : Math.ceil(at) - 1;
    if (next < 0 || next >= rows.length) {
      // Past the page's lines: the link to the run beyond them, if the file goes on.
      var past = document.querySelector('a[data-lead="' + (event.key === "n" ? "next" : "previous") + '"]');
      if (past) {
        event.preventDefault();
        location.href = past.href;
      }
      return;
    }
    event.preventDefault();
    location.hash = "#" + rows[next].id;
    var link = rows[next].querySelector("a");
    if (link) link.focus({ preventScroll: true });
  });
})();

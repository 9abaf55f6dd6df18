// Keyboard shortcuts. Why a sent form takes no more keys or clicks: docs/session.md, Web page.
(function () {
  var busy = false, working = document.getElementById('working');
  function wait(on) {  // a live region speaks when its text changes, not when it appears
    busy = on; document.body.classList.toggle('busy', on);
    working.textContent = on ? 'Saving and choosing the next question\u2026' : '';
  }
  window.addEventListener('pageshow', function () { wait(false); });  // a page kept in memory
  document.addEventListener('submit', function (e) {
    if (busy) { e.preventDefault(); return; }
    wait(true);
  }, true);
  document.addEventListener('keydown', function (e) {
    if (busy || e.repeat) return;
    if (e.target && (e.target.tagName === 'TEXTAREA' || e.target.tagName === 'INPUT')) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    // every button with a key says so (data-key): the answers of the question's kind,
    // skip, undo and next
    var keyed = document.querySelectorAll('button[data-key]'), b = null;
    for (var t = 0; t < keyed.length; t++) {
      if (keyed[t].getAttribute('data-key') === e.key) { b = keyed[t]; break; }
    }
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  });
})();

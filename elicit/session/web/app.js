// Keyboard shortcuts. Why a sent form takes no more keys or clicks: docs/session.md, Web page.
(function () {
  var busy = false, working = document.getElementById('working');
  function wait(on) {  // a live region speaks when its text changes, not when it appears
    busy = on; document.body.classList.toggle('busy', on);
    working.textContent = on ? 'Saving and choosing the next question\u2026' : '';
  }
  window.addEventListener('pageshow', function () { wait(false); });  // a page kept in memory
  var comment = document.getElementById('comment');
  document.addEventListener('submit', function (e) {
    if (busy) { e.preventDefault(); return; }
    // A skip keeps no comment (an answer does): the text typed would be lost without a word.
    // (Skip is a button of the answer form, sent to its own address; the server refuses too.)
    var to = (e.submitter && e.submitter.getAttribute('formaction')) || e.target.action;
    if (comment && comment.value.trim() && /\/skip(\?|$)/.test(to)) {
      e.preventDefault();
      working.textContent = 'Nothing was done: a skip keeps no comment, an answer does ' +
        '(Don\u2019t know keeps it too). Empty the comment box to skip.';
      return;
    }
    wait(true);
  }, true);
  document.addEventListener('keydown', function (e) {
    if (busy || e.repeat) return;
    if (e.target && (e.target.tagName === 'TEXTAREA' || e.target.tagName === 'INPUT')) {
      if (e.key === 'Escape') {  // out of the box, back to the question: its keys work again
        var question = document.querySelector('h2[tabindex]');
        if (question) question.focus(); else e.target.blur();
      }
      return;  // the letters typed there are the text's
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    // every control with a key says so (data-key): the answers of the question's kind,
    // skip, undo and next are clicked; the comment box is focused (the key not typed in it)
    var keyed = document.querySelectorAll('[data-key]'), b = null;
    for (var t = 0; t < keyed.length; t++) {
      if (keyed[t].getAttribute('data-key') === e.key) { b = keyed[t]; break; }
    }
    if (b && !b.disabled) {
      e.preventDefault();
      if (b.tagName === 'BUTTON') b.click(); else b.focus();
    }
  });

  // The K image: when the server could not draw it (503: the model busy or its refit failed),
  // say so in the page and offer to load it again, instead of a broken image.
  var kplot = document.getElementById('kplot'), failed = document.getElementById('kplot-failed'),
    again = document.getElementById('kplot-reload');
  function drawn(ok) {
    kplot.hidden = !ok; again.hidden = ok;
    failed.textContent = ok ? '' : 'The K image could not be drawn just now: the model is ' +
      'busy, or its refit failed.';
  }
  if (kplot) {
    kplot.addEventListener('load', function () { drawn(true); });
    kplot.addEventListener('error', function () { drawn(false); });
    if (kplot.complete && !kplot.naturalWidth) drawn(false);  // failed before this script ran
    again.addEventListener('click', function () {
      kplot.src = kplot.src.replace(/&again=\d+$/, '') + '&again=' + Date.now();
    });
  }
})();

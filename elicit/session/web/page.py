"""What the expert sees: the page template, its style sheet and its keyboard shortcuts, and
the fixed texts the application puts into it (:mod:`elicit.session.web.app` renders it)."""

#: Messages after a successful POST (redirect target ``/?m=<code>``); a fixed set so that no
#: request text is ever echoed into the page.
MESSAGES = {
    "saved": "Saved. Here is the next question.",
    "skipped": "Skipped; that pair may come back later.",
    "undone": "Undone: the last answer was withdrawn; you can answer that question again.",
}
#: The first words of those messages, for when the next question could not be chosen.
DONE_WORDS = {"saved": "Saved", "skipped": "Skipped", "undone": "Undone", None: "Sorry"}


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{{ token }}">
<title>elicit · {{ name }}</title>
<link rel="stylesheet" href="{{ url_for('css') }}">
<script src="{{ url_for('js') }}" defer></script>
</head><body>
<header>
  <h1>elicit <span class="file">{{ name }}</span></h1>
  {% if description %}<p class="desc">{{ description }}</p>{% endif %}
  <div class="progress" id="progress">
    <progress max="{{ pr.questions }}" value="{{ pr.answered }}" aria-hidden="true"></progress>
    <span>{{ pr.answered }} of {{ pr.questions }} {{ noun }}s answered{% if expert %} by
    {{ expert }}{% endif %}
    ({% for a in counted %}{{ pr[a.value] }} {{ a.label|lower }}, {% endfor %}{{
    pr.dont_know }} don't know{% if pr.skipped %}; {{ pr.skipped }} skipped{% endif %})</span>
  </div>
  <form method="post" action="{{ url_for('next_question') }}" class="who" id="expert-form">
    <input type="hidden" name="csrf_token" value="{{ token }}">
    <label for="expert">Your name</label>
    <input name="expert" id="expert" value="{{ expert }}" maxlength="80"
      placeholder="(unnamed expert)">
    <button type="submit" id="btn-expert">Answer as this expert</button>
  </form>
</header>{% macro signed(query=None) %}<input type="hidden" name="csrf_token" value="{{ token }}">
    <input type="hidden" name="expert" value="{{ expert }}">{% if query %}
    <input type="hidden" name="query_id" value="{{ query.id }}">{% endif %}{% endmacro %}
{% macro undo() %}<form method="post" action="{{ url_for('undo') }}">
    {{ signed() }}
    <input type="hidden" name="answer_id" value="{{ last_answer or 0 }}">
    <button type="submit" id="btn-undo" data-key="u" {{ '' if pr.answered else 'disabled' }}
      >Undo last answer <kbd>u</kbd></button></form>{% endmacro %}
{% if message %}
<p class="msg {{ 'error' if error else 'ok' }}" id="message" role="status" tabindex="-1"
  autofocus>{{ message }}</p>
{% endif %}
<main>
<section class="question">
{% if q %}
  <p class="lead">Question {{ pr.answered + 1 }}{% if worth %}
  <span class="gain" id="worth">{{ worth }}</span>{% endif %}</p>
  {% if hint %}<p class="hint" id="stop-hint">{{ hint }}</p>{% endif %}
  {% for line in notes %}<p class="hint kernel-note">{{ line }}</p>{% endfor %}
  <h2 id="question-{{ q.kind }}" tabindex="-1" autofocus>{{ question }}</h2>
  <div class="pair">
  {% for name, snippets, why in feats %}
    <div class="feature"><div class="fname" id="feature-{{ loop.index }}">{{ name }}</div>
    {% for pieces in snippets %}<blockquote>{% for text, hit in pieces %}{%
      if hit %}<mark>{{ text }}</mark>{% else %}{{ text }}{% endif %}{%
    endfor %}</blockquote>{% endfor %}
    {% if why %}<p class="nosnip">({{ why }})</p>{% endif %}</div>
  {% endfor %}
  </div>
  {% if no_snippets %}<p class="nosnip" id="no-snippets">({{ no_snippets }})</p>{% endif %}
  <form method="post" action="{{ url_for('answer') }}" id="answer-form">
    {{ signed(q) }}
    <div class="buttons">
    {% for a in answers %}
      <button type="submit" name="answer" value="{{ a.value }}" class="big {{ 'yes' if
        a.outcome == 1 else 'no' if a.outcome == 0 else 'dontknow' }}" id="btn-{{ a.value }}"
        data-key="{{ a.key }}">{{ a.label }} <kbd>{{ a.key }}</kbd></button>
    {% endfor %}
    </div>
    <label for="comment">Comment (optional)</label>
    <textarea name="comment" id="comment" rows="2" maxlength="10000"
      placeholder="Why? (saved with the answer)">{{ comment }}</textarea>
  </form>
  <div class="small-actions">
    <form method="post" action="{{ url_for('skip') }}">
      {{ signed(q) }}
      <button type="submit" id="btn-skip" data-key="k">Skip <kbd>k</kbd></button></form>
    {{ undo() }}
  </div>
{% elif done %}
  <h2 id="done">All {{ pr.questions }} {{ noun }}s are answered{% if expert %} by {{ expert }}{%
  endif %}. Thank you!</h2>
  {{ undo() }}
{% else %}
  <h2 id="no-question">No question is waiting{% if expert %} for {{ expert }}{% endif %}.</h2>
  <form method="post" action="{{ url_for('next_question') }}" id="next-form">
    {{ signed() }}
    <button type="submit" class="big yes" id="btn-next" data-key="n" autofocus>Show the next
      question <kbd>n</kbd></button>
  </form>
  <p class="note">The model chooses the question that teaches it most; on a large session
  that takes a few seconds.</p>
{% endif %}
  <p class="working" id="working" role="status"></p>
  <p class="note">Every answer is saved in the session file as soon as you click. You can close
  this page at any time and come back later.</p>
  {% if summary %}<details id="summary"><summary>About this session</summary><ul>
  {% for line in summary %}<li>{{ line }}</li>{% endfor %}</ul></details>{% endif %}
</section>
<aside>
  <h3>Current K (feature similarity)</h3>
  <img src="{{ url_for('k_png', v=version) }}" alt="heatmap of the current kernel matrix K"
    id="kplot">
  <h3>Latest answers</h3>
  {% if hist %}
  <table id="history"><thead><tr><th>#</th><th>expert</th><th>feature A</th><th>feature B</th>
    <th>answer</th><th>comment</th></tr></thead>
  <tbody>{% for r in hist %}
  <tr class="{{ 'undone' if r.undone else '' }}"><td>{{ r.answer_id }}</td>
  <td>{{ r.expert }}</td><td>{{ r.feature_i }}</td><td>{{ r.feature_j }}</td>
  <td>{{ labels[r.answer] }}{% if r.undone %} (undone){% endif %}</td>
  <td>{{ r.comment }}</td></tr>{% endfor %}</tbody></table>
  {% else %}<p id="history-empty">No answers yet.</p>{% endif %}
</aside>
</main>
</body></html>
"""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
  background:#f6f7f9}
header{background:#24364b;color:#fff;padding:.8rem 1.5rem}
header h1{margin:0;font-size:1.3rem}
.file{font-weight:normal;opacity:.8;font-size:1rem;margin-left:.5rem}
.desc{margin:.3rem 0;opacity:.85;font-size:.85rem}
.progress{display:flex;flex-wrap:wrap;align-items:center;gap:.8rem;font-size:.9rem}
progress{width:14rem}
main{display:flex;flex-wrap:wrap;gap:1.5rem;padding:1.2rem 1.5rem}
.question,aside{background:#fff;border-radius:8px;padding:1rem;box-shadow:0 1px 3px #0002}
.question{flex:1 1 34rem;padding:1rem 1.5rem}
aside{flex:0 1 30rem;overflow-x:auto}  /* a table wider than a phone scrolls in its box */
aside img{max-width:100%}
.lead{color:#666;margin:0}
.gain{float:right;font-size:.85rem}
h2{font-size:1.2rem;margin:.4rem 0 1rem}
.pair{display:flex;flex-wrap:wrap;gap:1rem}
.feature{flex:1 1 12rem;border:1px solid #dde;border-radius:6px;padding:.6rem}
.fname{font-size:1.6rem;font-weight:bold;text-align:center;margin-bottom:.4rem;
  word-break:break-word}
blockquote{margin:.3rem 0;font-size:.85rem;color:#555;border-left:3px solid #ccd;
  padding-left:.5rem}
.buttons{display:flex;flex-wrap:wrap;gap:1rem;margin:1.2rem 0}
button.big{flex:1;font-size:1.3rem;padding:1.1rem .5rem;border:0;border-radius:8px;color:#fff;
  cursor:pointer}
.yes{background:#25744a}
.no{background:#c0392b}
.dontknow{background:#5f6b6c}
button.big:hover{filter:brightness(1.1)}
textarea{width:100%;box-sizing:border-box;font:inherit}
.small-actions{display:flex;gap:1rem;margin-top:.8rem}
.small-actions button{padding:.4rem .9rem}
kbd{font-size:.7em;border:1px solid #fff8;border-radius:3px;padding:0 .25em}
.msg{margin:.8rem 1.5rem 0;padding:.6rem 1rem;border-radius:6px}
.msg.ok{background:#e4f4e8}
.msg.error{background:#fbe3e1;color:#8b1a10;font-weight:bold}
.note{color:#666;font-size:.8rem;margin-top:1.2rem}
.who{margin-top:.4rem;font-size:.85rem}
.who input{font:inherit;padding:.1rem .3rem}
.hint{background:#fff5d6;border-radius:6px;padding:.4rem .8rem}
mark{background:#ffe58a;font-weight:bold;padding:0 .1em}
details{font-size:.8rem;color:#555}
table{border-collapse:collapse;font-size:.8rem;width:100%}
td,th{border-bottom:1px solid #eee;padding:.2rem .4rem;text-align:left}
td:last-child{overflow-wrap:anywhere}  /* a comment's URL wraps */
tr.undone{color:#6b6b6b;text-decoration:line-through}
.nosnip{font-size:.8rem;color:#666;font-style:italic;margin:.3rem 0}
.working{color:#24364b;font-weight:bold}
body.busy .question form button{opacity:.6;cursor:progress}
"""

# Keyboard shortcuts; served as a file because the Content-Security-Policy forbids inline code.
# Why a sent form takes no more keys or clicks: docs/session.md, Web page.
JS = """
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
"""

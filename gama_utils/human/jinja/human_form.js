// The annotation form: progress, labels kept in localStorage, and the completed sheet as a CSV download.
// SHEET (the annotator's name), FIELDS (the label columns), FORMULA_STARTS and TEXT_PREFIX are defined by
// human_form.html.j2.
const STORE = "gama-validation-" + SHEET;
const items = () => Array.from(document.querySelectorAll("article.item"));
function value(item, field) {
  const c = item.querySelector('input[name="' + item.dataset.item + "|" + field + '"]:checked');
  return c ? c.value : "";
}
function update() {
  let done = 0;
  const saved = {};
  for (const item of items()) {
    const values = FIELDS.map(f => value(item, f));
    const complete = values.every(v => v !== "");
    if (complete) done += 1;
    item.classList.toggle("complete", complete);
    saved[item.dataset.item] = values;
  }
  document.getElementById("progress").textContent = done + " / " + items().length + " items complete";
  try { localStorage.setItem(STORE, JSON.stringify(saved)); } catch (e) {}
  return done;
}
function restore() {
  let saved = {};
  try { saved = JSON.parse(localStorage.getItem(STORE) || "{}"); } catch (e) {}
  for (const [id, values] of Object.entries(saved)) {
    values.forEach((v, k) => {
      const el = document.querySelector('input[name="' + id + "|" + FIELDS[k] + '"][value="' + v + '"]');
      if (el) el.checked = true;
    });
  }
}
// A cell a spreadsheet would run as a formula (or that starts with the prefix itself) gets TEXT_PREFIX in front;
// the sheet reader strips it again (gama_utils/human/csv_cells.py).
const formulaSafe = text =>
  [...FORMULA_STARTS, TEXT_PREFIX].some(c => text.startsWith(c)) ? TEXT_PREFIX + text : text;
const quote = s => '"' + formulaSafe(String(s)).replace(/"/g, '""') + '"';
function csv() {
  const rows = [["item_id", "answer_a", "answer_b", ...FIELDS]];
  for (const item of items()) {
    rows.push([item.dataset.item,
               item.querySelector('.answer[data-side="a"]').textContent,
               item.querySelector('.answer[data-side="b"]').textContent,
               ...FIELDS.map(f => value(item, f))]);
  }
  return "\ufeff" + rows.map(r => r.map(quote).join(",")).join("\r\n") + "\r\n";
}
function download() {
  const open = items().length - update();
  if (open > 0 && !confirm(open + " item(s) are not complete. Download anyway?")) return;
  const url = URL.createObjectURL(new Blob([csv()], {type: "text/csv;charset=utf-8"}));
  const link = document.createElement("a");
  link.href = url;
  link.download = SHEET + "_completed.csv";
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
document.getElementById("sheet").addEventListener("change", update);
document.getElementById("download").addEventListener("click", download);
restore();
update();

/* Sorting and filtering for the leaderboard's tables. No dependencies; works from file://. */
(function () {
  "use strict";

  // A cell's sort key: data-value when present ("" = missing), else its text.
  function cellKey(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) { return null; }
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    if (raw === "" || raw === "\u2014") { return null; }
    if (numeric) {
      var number = parseFloat(raw);
      return isNaN(number) ? null : number;
    }
    return raw.toLowerCase();
  }

  function compareKeys(a, b, numeric, direction) {
    // Missing values go last whichever way the column is sorted.
    if (a === null && b === null) { return 0; }
    if (a === null) { return 1; }
    if (b === null) { return -1; }
    var order = numeric ? a - b : a.localeCompare(b, undefined, { numeric: true });
    return direction === "ascending" ? order : -order;
  }

  function sortBy(table, header) {
    var index = header.cellIndex;
    var numeric = header.getAttribute("data-sort") === "num";
    var current = header.getAttribute("aria-sort");
    // Numbers start high-to-low (best first for most metrics); text starts A-Z.
    var first = numeric ? "descending" : "ascending";
    var direction = current === first ? (first === "ascending" ? "descending" : "ascending") : first;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, position) {
      return { row: row, key: cellKey(row, index, numeric), position: position };
    });
    keyed.sort(function (a, b) {
      return compareKeys(a.key, b.key, numeric, direction) || a.position - b.position;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(header.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction);
  }

  function enableSorting(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) { return; }
    Array.prototype.forEach.call(head.cells, function (header) {
      if (!header.hasAttribute("data-sort")) { return; }
      header.tabIndex = 0;
      header.classList.add("sort-header");
      header.addEventListener("click", function () { sortBy(table, header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, header);
        }
      });
    });
  }

  function applyFilters(panel, table) {
    var selects = panel.querySelectorAll("select[data-filter]");
    var search = panel.querySelector("input[data-filter-text]");
    var needle = search ? search.value.trim().toLowerCase() : "";
    var rows = table.tBodies[0].rows;
    var shown = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var visible = Array.prototype.every.call(selects, function (select) {
        return select.value === "" || row.getAttribute("data-" + select.getAttribute("data-filter")) === select.value;
      });
      if (visible && needle) {
        visible = row.textContent.toLowerCase().indexOf(needle) !== -1;
      }
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    var count = panel.querySelector(".filter-count");
    if (count) { count.textContent = shown + " of " + rows.length + " rows"; }
  }

  function enableFilters(panel) {
    var table = document.getElementById(panel.getAttribute("data-for"));
    if (!table || !table.tBodies[0]) { return; }
    var update = function () { applyFilters(panel, table); };
    Array.prototype.forEach.call(panel.querySelectorAll("select, input"), function (control) {
      control.addEventListener("input", update);
      control.addEventListener("change", update);
    });
    update();
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), enableSorting);
    Array.prototype.forEach.call(document.querySelectorAll(".filters[data-for]"), enableFilters);
  });
})();

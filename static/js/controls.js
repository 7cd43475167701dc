// Run controls (Stop, Cancel, Continue, Resume, Land now, Approve, Reject, Keep, Keep as, Discard).
//
// Live pushes replace the fragments that hold these buttons every step. A button that htmx
// owned could be swapped out while its confirmation was open, and htmx would then drop the
// request. So one listener on the document handles them: it asks, then posts through
// htmx.ajax from <body>, which no push replaces. The answer swaps out of band (#flash, the run).
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-control-url]");
  if (!button) return;
  event.preventDefault();
  var question = button.getAttribute("data-confirm");
  if (question && !window.confirm(question)) return;
  var values = {};
  var reasonFrom = button.getAttribute("data-reason-from");
  if (reasonFrom) {
    var field = document.querySelector(reasonFrom);
    values.reason = field ? field.value : "";
  }
  var branchFrom = button.getAttribute("data-branch-from");  // Keep as: the branch a person named
  if (branchFrom) {
    var branch = document.querySelector(branchFrom);
    values.branch = branch ? branch.value : "";
  }
  htmx.ajax("POST", button.getAttribute("data-control-url"),
            {source: document.body, swap: "none", values: values});
});

// A plain form that asks first (<form data-confirm="…">): the Content-Security-Policy allows no
// inline handlers, so the question is asked here.
document.addEventListener("submit", function (event) {
  var question = event.target.getAttribute && event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});

// The live label (#live-status) of a page with a socket: "live" while its socket is open, "not
// live: reload" once it closes — dropped, refused at the handshake (a wrong origin), or closed
// because the session ended — until a reconnect opens it again. The label is the socket's state,
// never a promise the page cannot keep: a refused socket used to leave it saying "live" while
// nothing reached the page.
(function () {
  function label(event, text, live) {
    var status = document.getElementById("live-status");
    var socket = event.target;
    if (!status || !socket || !socket.contains || !socket.contains(status)) return;  // another socket (the nav's)
    status.textContent = text;
    status.classList.toggle("not-live", !live);
  }
  document.addEventListener("htmx:wsOpen", function (event) { label(event, "live", true); });
  document.addEventListener("htmx:wsClose", function (event) { label(event, "not live: reload", false); });
  document.addEventListener("htmx:wsError", function (event) { label(event, "not live: reload", false); });
})();

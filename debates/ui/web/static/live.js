// The live debate page: turns arrive over the websocket; the person's seat answers through it.
// Leaving the page closes the socket, which cancels the debate on the server.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var statusLine = document.getElementById("status");
  var turns = document.getElementById("turns");
  var verdict = document.getElementById("verdict");
  var panel = document.getElementById("seat-panel");
  var form = document.getElementById("seat-form");
  var finished = false;
  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  var socket = new WebSocket(scheme + location.host + live.dataset.socket);

  function say(text) { statusLine.textContent = text; }

  function showProblem(text) {
    var box = document.getElementById("seat-problem");
    if (!box) { say(text); return; }
    box.textContent = text;
    box.hidden = false;
  }

  socket.addEventListener("open", function () { say("Connected; waiting for the first turn…"); });
  socket.addEventListener("message", function (event) {
    var message = JSON.parse(event.data);
    if (message.type === "status") {
      say(message.text);
    } else if (message.type === "turn") {
      turns.insertAdjacentHTML("beforeend", message.html);
      say("The debate is running.");
    } else if (message.type === "your_turn") {
      document.getElementById("seat-prompt").textContent = message.prompt;
      document.getElementById("seat-problem").hidden = true;
      panel.hidden = false;
      document.getElementById("send").disabled = false;
      say("Your turn: read what your seat sees, then answer.");
      panel.scrollIntoView({behavior: "smooth", block: "start"});
    } else if (message.type === "sent") {
      panel.hidden = true;
      document.getElementById("argument").value = "";
      say("Sent. The others are answering.");
    } else if (message.type === "problem") {
      showProblem(message.text);
      var send = document.getElementById("send");
      if (send) { send.disabled = false; }
    } else if (message.type === "verdict") {
      finished = true;
      verdict.innerHTML = message.html;
      if (panel) { panel.hidden = true; }
      say("Finished.");
    } else if (message.type === "saved") {
      var note = document.createElement("p");
      note.id = "saved-run";
      note.className = "muted";
      if (message.href) {
        var link = document.createElement("a");
        link.href = message.href;
        link.textContent = message.text;
        note.appendChild(link);
      } else {
        note.textContent = message.text;
      }
      verdict.appendChild(note);
    } else if (message.type === "failed") {
      finished = true;
      say(message.text);
      statusLine.classList.add("problem");
    }
  });
  socket.addEventListener("close", function () {
    if (!finished) {
      say(statusLine.classList.contains("problem") ? statusLine.textContent : "The connection to the server closed; the debate has stopped.");
    }
  });

  if (form) {
    var range = document.getElementById("confidence");
    range.addEventListener("input", function () { document.getElementById("confidence-shown").textContent = range.value; });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var picked = form.querySelector("input[name=label]:checked");
      document.getElementById("send").disabled = true;
      socket.send(JSON.stringify({
        type: "answer",
        label: picked ? picked.value : "",
        confidence: parseInt(range.value, 10),
        argument: document.getElementById("argument").value
      }));
    });
  }
  window.addEventListener("pagehide", function () { socket.close(); });
})();

// Upload with progress: XHR POST to the API (upload.onprogress), then poll the status URL and open the
// diagnosis page. Without JavaScript the form posts to /upload (same intake, CSRF token, API key field),
// which answers 303 to the diagnosis page.
"use strict";
(function () {
  const form = document.getElementById("upload");
  if (!form) return;
  const file = document.getElementById("bundle");
  const key = document.getElementById("api-key");
  const bar = document.getElementById("bar");
  const stage = document.getElementById("stage");
  const box = document.getElementById("progress");
  const err = document.getElementById("error");
  const button = document.getElementById("submit");
  const KEY = "vsandx.apiKey";
  if (key) key.value = localStorage.getItem(KEY) || "";

  function fail(message) {
    err.textContent = message;
    err.hidden = false;
    button.disabled = false;
  }

  function detail(xhr) {
    try { return JSON.parse(xhr.responseText).detail || xhr.statusText; } catch (e) { return xhr.statusText; }
  }

  function poll(url, id, started) {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("status " + r.status); return r.json(); })
      .then(function (res) {
        if (res.status === "done" || res.status === "failed") {
          window.location.assign("/diagnoses/" + encodeURIComponent(id));
          return;
        }
        const s = Math.round((Date.now() - started) / 1000);
        stage.textContent = "Diagnosis " + res.status + "… " + s + " s";
        setTimeout(function () { poll(url, id, started); }, 700);
      })
      .catch(function (e) { fail("Could not read the diagnosis status: " + e.message); });
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!file.files.length) { fail("Choose a bundle file first."); return; }
    const max = Number(form.dataset.maxBytes || 0);
    if (max && file.files[0].size > max) {  // the server would cut the upload short with a 413
      fail("This file is " + (file.files[0].size / 1048576).toFixed(0) + " MB; the service takes at most " +
           (max / 1048576).toFixed(0) + " MB per upload.");
      return;
    }
    err.hidden = true;
    button.disabled = true;
    box.hidden = false;
    bar.value = 0;
    stage.textContent = "Uploading…";
    const data = new FormData();
    data.append("bundle", file.files[0]);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/diagnoses");
    xhr.setRequestHeader("Accept", "application/json");
    if (key && key.value) {
      localStorage.setItem(KEY, key.value);
      xhr.setRequestHeader("X-API-Key", key.value);
    }
    xhr.upload.onprogress = function (e) {
      if (!e.lengthComputable) return;
      bar.value = Math.round((100 * e.loaded) / e.total);
      stage.textContent = "Uploading… " + bar.value + " % of " + (e.total / 1048576).toFixed(1) + " MB";
    };
    xhr.upload.onload = function () { bar.value = 100; stage.textContent = "Uploaded; checking the bundle…"; };
    xhr.onerror = function () { fail("The upload failed: the connection to the service was lost."); };
    xhr.onload = function () {
      if (xhr.status === 201 || xhr.status === 202 || xhr.status === 200) {
        const res = JSON.parse(xhr.responseText);
        stage.textContent = "Queued for diagnosis…";
        poll(res.status_url, res.id, Date.now());
      } else if (xhr.status === 401) {
        fail("The service wants an API key (X-API-Key): " + detail(xhr));
      } else {
        fail("Upload refused (" + xhr.status + "): " + detail(xhr));
      }
    };
    xhr.send(data);
  });
})();

/* A Web Worker run in a hidden iframe, so that the site's search works when the pages are opened
 * from disk (file://), where browsers refuse to start a Worker. Material's offline plugin adds
 * https://unpkg.com/iframe-worker/shim for this unless a polyfill named "iframe-worker" is given;
 * this file is that polyfill, bundled so that nothing is fetched from the network (mkdocs.yml,
 * extra.polyfills). Over http(s) it does nothing and the browser's Worker is used.
 *
 * The worker's script runs in the iframe's window: its postMessage() reaches this object's
 * "message" listeners, this object's postMessage() reaches the script's listeners, and
 * importScripts() loads scripts with <script> elements (returning a promise, which Material's
 * search worker awaits). Messages sent before the script has loaded are queued. */
(function () {
  "use strict";
  if (location.protocol !== "file:" || typeof document === "undefined") {
    return;
  }

  function load(doc, url) {
    return new Promise(function (resolve, reject) {
      var script = doc.createElement("script");
      script.src = url;
      script.onload = function () { resolve(); };
      script.onerror = function () { reject(new Error("could not load " + url)); };
      doc.head.appendChild(script);
    });
  }

  function IFrameWorker(url) {
    var target = document.createDocumentFragment();  // an EventTarget for this worker's listeners
    var self = this;
    var queue = [];
    var ready = false;
    this.onmessage = null;
    this.onerror = null;
    this.addEventListener = target.addEventListener.bind(target);
    this.removeEventListener = target.removeEventListener.bind(target);
    this.dispatchEvent = target.dispatchEvent.bind(target);

    var frame = document.createElement("iframe");
    frame.setAttribute("aria-hidden", "true");
    frame.setAttribute("tabindex", "-1");
    frame.style.cssText = "position:absolute;width:0;height:0;border:0;visibility:hidden";
    document.body.appendChild(frame);
    var win = frame.contentWindow;
    var doc = frame.contentDocument;
    doc.open();
    doc.write("<!doctype html><html><head></head><body></body></html>");
    doc.close();

    win.postMessage = function (data) {  // the worker's postMessage: to this object's listeners
      var event = new MessageEvent("message", { data: data });
      if (typeof self.onmessage === "function") {
        self.onmessage(event);
      }
      target.dispatchEvent(event);
    };
    win.importScripts = function () {
      var urls = Array.prototype.slice.call(arguments);
      return urls.reduce(function (done, u) {
        return done.then(function () { return load(doc, new URL(u, url).href); });
      }, Promise.resolve());
    };
    win.close = function () { self.terminate(); };

    this._deliver = function (data) {
      win.dispatchEvent(new win.MessageEvent("message", { data: data }));
    };
    this.postMessage = function (data) {
      if (ready) {
        self._deliver(data);
      } else {
        queue.push(data);
      }
    };
    this.terminate = function () {
      if (frame.parentNode) {
        frame.parentNode.removeChild(frame);
      }
    };
    load(doc, new URL(url, location.href).href).then(function () {
      ready = true;
      queue.splice(0).forEach(self._deliver);
    }, function (err) {
      var event = new ErrorEvent("error", { message: String(err) });
      if (typeof self.onerror === "function") {
        self.onerror(event);
      }
      target.dispatchEvent(event);
    });
  }

  window.Worker = IFrameWorker;
})();

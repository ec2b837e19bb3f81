// The signed upload from the browser, as the API's three steps: declare the file (this site answers
// a signed URL), PUT the bytes straight to that URL with a progress bar, then complete it. A file
// input with data-upload runs it for each file chosen and tells the page with a `media-uploaded`
// event carrying the new media.
(() => {
  const csrfToken = document.querySelector('input[name="csrf_token"]')?.value ?? '';

  const postJson = async (url, body) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrfToken },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = answer.error ?? {};
      const details = (error.details ?? []).map((detail) => detail.message).join(' ');
      throw new Error([error.message ?? `The server answered ${response.status}.`, details].filter(Boolean).join(' '));
    }
    return answer;
  };

  // XMLHttpRequest, not fetch: only it reports the progress of what it sends.
  const put = (upload, file, progress) =>
    new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open(upload.method, upload.uploadUrl);
      for (const [name, value] of Object.entries(upload.headers)) {
        // The browser sets Content-Length itself and refuses to be told.
        if (name.toLowerCase() !== 'content-length') request.setRequestHeader(name, value);
      }
      request.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable) progress.value = event.loaded / event.total;
      });
      request.addEventListener('load', () => {
        if (request.status >= 200 && request.status < 300) return resolve();
        let message = `The storage answered ${request.status}.`;
        try {
          message = JSON.parse(request.responseText).error.message ?? message;
        } catch {
          // Not the error envelope: the status says what happened.
        }
        reject(new Error(message));
      });
      request.addEventListener('error', () => reject(new Error('The file could not be sent: the connection failed.')));
      request.send(file);
    });

  const uploadOne = async (input, file, status) => {
    const row = document.createElement('div');
    row.className = 'upload-row';
    const label = document.createElement('span');
    label.textContent = file.name;
    const progress = document.createElement('progress');
    progress.max = 1;
    progress.value = 0;
    progress.setAttribute('aria-label', `Uploading ${file.name}`);
    row.append(label, progress);
    status.append(row);
    try {
      const upload = await postJson('/media/uploads', {
        fileName: file.name || 'file',
        contentType: file.type || 'application/octet-stream',
        size: file.size,
      });
      await put(upload, file, progress);
      const media = await postJson(`/media/uploads/${encodeURIComponent(upload.uploadId)}/complete`);
      progress.value = 1;
      label.textContent = `${file.name}: uploaded`;
      input.dispatchEvent(new CustomEvent('media-uploaded', { detail: media, bubbles: true }));
    } catch (error) {
      progress.remove();
      row.classList.add('field-error');
      row.setAttribute('role', 'alert');
      label.textContent = `${file.name} was not uploaded: ${error.message}`;
    }
  };

  for (const input of document.querySelectorAll('input[type="file"][data-upload]')) {
    const status = document.getElementById(input.getAttribute('aria-describedby')) ?? input.parentElement;
    input.addEventListener('change', async () => {
      const files = [...input.files];
      input.value = '';
      let uploaded = 0;
      input.addEventListener('media-uploaded', () => uploaded++, { once: false });
      for (const file of files) await uploadOne(input, file, status);
      // The library shows the new media by showing itself again.
      if (input.dataset.upload === 'library' && uploaded > 0) location.reload();
    });
  }
})();

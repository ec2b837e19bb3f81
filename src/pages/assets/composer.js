// The composer: settings and counts follow the channels ticked, the text is counted as each network
// counts it, uploaded media is added to the choices (ticked), and the form is sent once.
(() => {
  const form = document.querySelector('form[data-composer]');
  if (!form) return;
  const content = form.querySelector('#content');
  const channels = [...form.querySelectorAll('[data-channel]')];
  const chosen = () => channels.filter((input) => input.type === 'hidden' || input.checked);

  const follow = () => {
    const ids = new Set(chosen().map((input) => input.value));
    const networks = new Set(chosen().map((input) => input.dataset.provider));
    for (const section of form.querySelectorAll('[data-settings-for]'))
      section.hidden = !ids.has(section.dataset.settingsFor);
    for (const count of form.querySelectorAll('[data-count-for]')) count.hidden = !networks.has(count.dataset.countFor);
  };

  const encoder = new TextEncoder();
  const count = () => {
    const text = content.value.replace(/\r\n/g, '\n');
    for (const item of form.querySelectorAll('[data-count-for]')) {
      const used = item.dataset.unit === 'bytes' ? encoder.encode(text).length : text.length;
      item.querySelector('.count').textContent = String(used);
      item.classList.toggle('over', used > Number(item.dataset.max));
    }
  };

  for (const input of channels) input.addEventListener('change', follow);
  content.addEventListener('input', count);
  follow();
  count();

  form.addEventListener('media-uploaded', (event) => {
    const media = event.detail;
    const list = form.querySelector('[data-media-list]');
    form.querySelector('[data-media-empty]')?.remove();
    const item = document.createElement('li');
    const label = document.createElement('label');
    label.className = 'media-choice';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.name = 'media';
    box.value = media.id;
    box.checked = true;
    label.append(box);
    if (media.kind === 'image') {
      const img = document.createElement('img');
      img.src = media.url;
      img.alt = '';
      img.width = 96;
      img.height = 96;
      label.append(img);
    } else {
      const tile = document.createElement('span');
      tile.className = 'video-tile';
      tile.setAttribute('aria-hidden', 'true');
      tile.textContent = '▶';
      label.append(tile);
    }
    const name = document.createElement('span');
    name.className = 'media-name';
    name.textContent = media.fileName;
    label.append(name);
    item.append(label);
    list.prepend(item);
  });

  // One submission per page: a second click while the first is on its way does nothing here, and the
  // server's idempotency key makes a second request that got through create nothing more.
  form.addEventListener('submit', (event) => {
    if (form.dataset.sending) {
      event.preventDefault();
      return;
    }
    form.dataset.sending = 'true';
    form.setAttribute('aria-busy', 'true');
  });
  // Coming back to the page from the history keeps it usable.
  window.addEventListener('pageshow', () => {
    delete form.dataset.sending;
    form.removeAttribute('aria-busy');
  });
})();

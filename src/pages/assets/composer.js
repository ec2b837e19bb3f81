// The composer: settings, counts, alternative texts and the first comment follow the channels ticked,
// every part's text and the comment are counted as each network counts them (by the server, which knows
// the networks' rules), uploaded media is
// added to every part's choices (ticked in the part it was uploaded for), and the form is sent once. The
// counts are told to the form as a `composer-counts` event, which the preview (composer-preview.js) follows.
(() => {
  const form = document.querySelector('form[data-composer]');
  if (!form) return;
  const csrfToken = form.querySelector('input[name="csrf_token"]')?.value ?? '';
  const channels = [...form.querySelectorAll('[data-channel]')];
  const chosen = () => channels.filter((input) => input.type === 'hidden' || input.checked);
  const altTextNetworks = new Set((form.dataset.altTextNetworks ?? '').split(' ').filter(Boolean));
  const firstComment = form.querySelector('[data-first-comment]');
  const commentNetworks = new Set((firstComment?.dataset.networks ?? '').split(' ').filter(Boolean));

  const follow = () => {
    const ids = new Set(chosen().map((input) => input.value));
    const networks = new Set(chosen().map((input) => input.dataset.provider));
    for (const section of form.querySelectorAll('[data-settings-for]'))
      section.hidden = !ids.has(section.dataset.settingsFor);
    for (const count of form.querySelectorAll('[data-count-for]'))
      count.hidden = !count.dataset.channels.split(' ').some((id) => ids.has(id));
    // Until a channel is chosen, the field stays for whoever wants to write it first.
    const takesAltText = networks.size === 0 || [...networks].some((network) => altTextNetworks.has(network));
    form.classList.toggle('no-alt-text', !takesAltText);
    // Sent only to the networks that take comments, so it is offered only while one of them is chosen.
    if (firstComment) firstComment.hidden = ![...networks].some((network) => commentNetworks.has(network));
  };

  // The latest question wins: an answer to an older one (typing goes on meanwhile) is not shown.
  let asked = 0;
  let timer;
  const count = async () => {
    const question = ++asked;
    const texts = [...form.querySelectorAll('[data-part-text]')];
    const commentText = form.querySelector('[data-comment-text]');
    try {
      const response = await fetch('/compose/counts', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrfToken },
        body: JSON.stringify({ texts: texts.map((text) => text.value), comment: commentText?.value ?? '' }),
      });
      if (!response.ok || question !== asked) return;
      const answer = await response.json();
      const { counts, comment } = answer;
      // The preview cuts each text where its networks' limits do.
      form.dispatchEvent(new CustomEvent('composer-counts', { detail: answer }));
      for (const item of form.querySelectorAll('#firstComment-counts [data-count-for]')) {
        const used = comment[item.dataset.countFor];
        if (used === undefined) continue;
        item.querySelector('.count').textContent = String(used);
        item.classList.toggle('over', used > Number(item.dataset.max));
      }
      texts.forEach((text, i) => {
        const list = document.getElementById(text.getAttribute('aria-describedby').split(' ')[0]);
        for (const item of list?.querySelectorAll('[data-count-for]') ?? []) {
          const used = counts[item.dataset.countFor]?.[i];
          if (used === undefined) continue;
          item.querySelector('.count').textContent = String(used);
          item.classList.toggle('over', used > Number(item.dataset.max));
        }
      });
    } catch {
      // The counts stay as they were; the server checks the text when the form is sent.
    }
  };

  for (const input of channels) input.addEventListener('change', follow);
  form.addEventListener('input', (event) => {
    if (!event.target.matches('[data-part-text], [data-comment-text]')) return;
    clearTimeout(timer);
    timer = setTimeout(count, 150);
  });
  follow();
  // A form shown again with its texts is counted at once, for the preview's cuts.
  if ([...form.querySelectorAll('[data-part-text]')].some((text) => text.value !== '')) count();

  /** A part's field names and ids start with these: none for the post's own part. */
  const prefixes = (part) => {
    const index = Number(part.dataset.part);
    return index === 0 ? { name: '', id: '' } : { name: `thread.${index - 1}.`, id: `thread-${index - 1}-` };
  };

  const mediaItem = (media, part, checked) => {
    const { name, id } = prefixes(part);
    const item = document.createElement('li');
    item.className = 'media-item';
    const label = document.createElement('label');
    label.className = 'media-choice';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.name = `${name}media`;
    box.value = media.id;
    box.checked = checked;
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
    const fileName = document.createElement('span');
    fileName.className = 'media-name';
    fileName.textContent = media.fileName;
    label.append(fileName);
    item.append(label);
    const where = part.dataset.part === '0' ? '' : ` in part ${Number(part.dataset.part) + 1}`;
    const position = document.createElement('div');
    position.className = 'media-position';
    position.dataset.mediaPosition = '';
    const positionLabel = document.createElement('label');
    positionLabel.htmlFor = `${id}position-${media.id}`;
    positionLabel.textContent = 'Position';
    const positionHint = document.createElement('span');
    positionHint.className = 'visually-hidden';
    positionHint.textContent = ` of ${media.fileName}${where}`;
    positionLabel.append(positionHint);
    const positionInput = document.createElement('input');
    positionInput.type = 'number';
    positionInput.id = `${id}position-${media.id}`;
    positionInput.name = `${name}position.${media.id}`;
    positionInput.min = '1';
    positionInput.max = '99';
    positionInput.inputMode = 'numeric';
    position.append(positionLabel, positionInput);
    item.append(position);
    if (media.kind === 'image' && altTextNetworks.size > 0) {
      const alt = document.createElement('div');
      alt.className = 'alt-text';
      alt.dataset.altText = '';
      const altLabel = document.createElement('label');
      altLabel.htmlFor = `${id}alt-${media.id}`;
      altLabel.textContent = 'Alternative text';
      const hint = document.createElement('span');
      hint.className = 'visually-hidden';
      hint.textContent = ` of ${media.fileName}${where}`;
      altLabel.append(hint);
      const text = document.createElement('textarea');
      text.id = `${id}alt-${media.id}`;
      text.name = `${name}alt.${media.id}`;
      text.rows = 2;
      alt.append(altLabel, text);
      item.append(alt);
    }
    return item;
  };

  // A media chosen comes after the ones chosen before it in its part (a carousel's order), until its
  // position is changed; one no longer chosen has none.
  const placeChosen = (box) => {
    const position = box.closest('.media-item')?.querySelector('[data-media-position] input');
    if (!position) return;
    if (!box.checked) {
      position.value = '';
      return;
    }
    if (position.value !== '') return;
    const taken = [...box.closest('[data-media-list]').querySelectorAll('[data-media-position] input')]
      .filter((input) => input !== position && input.value !== '')
      .map((input) => Number(input.value))
      .filter((n) => Number.isFinite(n));
    position.value = String(Math.max(0, ...taken) + 1);
  };
  form.addEventListener('change', (event) => {
    if (event.target.matches('.media-choice input[type="checkbox"]')) placeChosen(event.target);
  });

  form.addEventListener('media-uploaded', (event) => {
    const media = event.detail;
    const uploadedFor = event.target.closest('[data-part]');
    for (const part of form.querySelectorAll('[data-part]')) {
      const list = part.querySelector('[data-media-list]');
      if (!list) continue;
      part.querySelector('[data-media-empty]')?.remove();
      const item = mediaItem(media, part, part === uploadedFor);
      list.prepend(item);
      placeChosen(item.querySelector('input[type="checkbox"]'));
    }
  });

  // An image not chosen sends no alternative text: its field is left out of what the form sends.
  const altOfUnchosen = () =>
    [...form.querySelectorAll('.media-item')]
      .filter((item) => !item.querySelector('input[type="checkbox"]')?.checked)
      .flatMap((item) => [...item.querySelectorAll('[data-alt-text] textarea')]);

  // One submission per page: a second click while the first is on its way does nothing here, and the
  // server's idempotency key makes a second request that got through create nothing more.
  form.addEventListener('submit', (event) => {
    if (form.dataset.sending) {
      event.preventDefault();
      return;
    }
    for (const text of altOfUnchosen()) text.disabled = true;
    form.dataset.sending = 'true';
    form.setAttribute('aria-busy', 'true');
  });
  // Coming back to the page from the history keeps it usable.
  window.addEventListener('pageshow', () => {
    delete form.dataset.sending;
    form.removeAttribute('aria-busy');
    for (const text of form.querySelectorAll('[data-alt-text] textarea')) text.disabled = false;
  });
})();

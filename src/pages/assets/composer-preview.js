// The composer's preview: for each channel ticked, how its network shows the post as the form holds it
// now. The text is cut where the network's limit falls, as the server counts it (the counts the
// composer asks for carry, per text, the length that fits); a thread's parts come one after the other
// on the networks that take threads; the chosen media of each part, the card of a link on the networks
// that show one, and the first comment on those that take comments. Nothing here is sent: the server
// checks the post by the same rules when the form is sent. Without this script there is no preview.
(() => {
  const form = document.querySelector('form[data-composer]');
  const section = document.getElementById('preview');
  if (!form || !section) return;
  const channels = JSON.parse(section.dataset.preview);
  const list = section.querySelector('[data-preview-list]');
  // The last counts' cuts, by counter and by text field.
  let fits = new Map();

  const element = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  const chosenChannels = () => {
    const ids = [...form.querySelectorAll('[data-channel]')]
      .filter((input) => input.type === 'hidden' || input.checked)
      .map((input) => input.value);
    return channels.filter((channel) => ids.includes(channel.id));
  };

  /** The parts as the form holds them: each one's text (field or published), its field, and its chosen media. */
  const parts = () =>
    [...form.querySelectorAll('[data-part]')].map((part) => {
      const field = part.querySelector('[data-part-text]');
      const text = field
        ? field.value.replace(/\r\n/g, '\n')
        : (part.querySelector('.published-part')?.firstChild?.textContent ?? '');
      const media = [...part.querySelectorAll('.media-item')]
        .filter((item) => item.querySelector('.media-choice input[type="checkbox"]')?.checked)
        .map((item) => ({
          position: Number(item.querySelector('[data-media-position] input')?.value || 99),
          image: item.querySelector('.media-choice img')?.getAttribute('src') ?? null,
          name: item.querySelector('.media-name')?.textContent ?? '',
        }))
        .sort((a, b) => a.position - b.position);
      return { field, text, media };
    });

  const firstUrl = (text) => {
    const match = /https?:\/\/[^\s<>"]+[^\s<>".,;:!?)]/.exec(text);
    if (!match) return undefined;
    try {
      return new URL(match[0]);
    } catch {
      return undefined;
    }
  };

  /** The card a network shows for a part, or none: a link of the text, or of the post's link setting. */
  const cardOf = (channel, part, index) => {
    if (channel.card === 'setting') {
      if (index > 0) return undefined;
      const value = form.querySelector(`[name="settings.${channel.id}.link"]`)?.value.trim() ?? '';
      return value === '' ? undefined : firstUrl(value);
    }
    if (channel.card !== 'text' || part.media.length > 0) return undefined;
    const choice = form.querySelector(`[name="settings.${channel.id}.linkCard"]:checked`);
    if (choice && choice.value === 'no') return undefined;
    return firstUrl(part.text);
  };

  const render = () => {
    const shown = chosenChannels();
    list.replaceChildren();
    if (shown.length === 0) {
      list.append(element('p', 'meta', 'Tick a channel to see how its network shows the post.'));
      return;
    }
    const all = parts();
    const comment = form.querySelector('[data-comment-text]')?.value.trim() ?? '';
    const fields = [...form.querySelectorAll('[data-part-text]')];
    for (const channel of shown) {
      const card = element('article', 'preview-post');
      card.dataset.previewChannel = channel.id;
      card.setAttribute('aria-label', `${channel.network}: ${channel.name}`);
      card.append(element('h3', '', `${channel.network} · ${channel.name}`));
      const published = all.slice(0, Math.max(1, Math.min(all.length, channel.maxParts)));
      published.forEach((part, index) => {
        const box = element('div', 'preview-part');
        if (published.length > 1) box.append(element('p', 'preview-number', `${index + 1}/${published.length}`));
        const fit = fits.get(channel.counter)?.get(part.field ? fields.indexOf(part.field) : -1);
        const cut = fit !== undefined && fit < part.text.length;
        const text = element('p', 'preview-text', cut ? `${part.text.slice(0, fit)}…` : part.text);
        if (part.text === '') text.append(element('span', 'meta', '(no text)'));
        box.append(text);
        if (cut)
          box.append(
            element(
              'p',
              'preview-over',
              `Too long for ${channel.network}: at most ${channel.max} ${channel.unitWords}; ` +
                'what follows “…” does not fit, and the post is refused until the text is shorter.',
            ),
          );
        if (part.media.length > 0) {
          const media = element('ul', 'preview-media');
          for (const item of part.media) {
            const li = element('li');
            if (item.image) {
              const img = element('img');
              img.src = item.image;
              img.alt = item.name;
              img.width = 64;
              img.height = 64;
              li.append(img);
            } else li.append(element('span', 'preview-file', item.name));
            media.append(li);
          }
          box.append(media);
        }
        const link = cardOf(channel, part, index);
        if (link) {
          const linkCard = element('div', 'preview-link');
          linkCard.append(
            element('strong', '', link.hostname),
            element('span', 'meta', ' link card: the page’s title, description and image'),
          );
          box.append(linkCard);
        }
        card.append(box);
      });
      if (all.length > published.length)
        card.append(
          element(
            'p',
            'preview-over',
            channel.maxParts === 1
              ? `${channel.network} takes no thread: only the first part is a post there, ` +
                  'and the post is refused with the others.'
              : `${channel.network} takes at most ${channel.maxParts} parts; the post is refused with more.`,
          ),
        );
      if (channel.comment && comment !== '') {
        const reply = element('div', 'preview-comment');
        reply.append(element('strong', '', 'First comment: '), document.createTextNode(comment));
        card.append(reply);
      }
      list.append(card);
    }
  };

  form.addEventListener('composer-counts', (event) => {
    // By counter, the length that fits of each text field, in the order the fields were counted in.
    fits = new Map(
      Object.entries(event.detail.fits ?? {}).map(([counter, lengths]) => [
        counter,
        new Map(lengths.map((fit, i) => [i, fit])),
      ]),
    );
    render();
  });
  // What changes no count shows at once; a text waits for its counts (and their cuts).
  form.addEventListener('change', render);
  form.addEventListener('media-uploaded', () => setTimeout(render));
  section.hidden = false;
  render();
})();

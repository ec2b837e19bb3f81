import type { ProviderSettings } from './post-body.js';

/**
 * The settings as stored and answered: every optional choice with its documented default. The
 * contract cannot declare these defaults itself, because the validator would inject them into every
 * branch of the `__type` union it tries.
 */
export function withDefaults(settings: ProviderSettings): ProviderSettings {
  switch (settings.__type) {
    case 'youtube':
      return { ...settings, tags: settings.tags ?? [] };
    case 'tiktok':
      return {
        ...settings,
        disableComment: settings.disableComment ?? false,
        disableDuet: settings.disableDuet ?? false,
        disableStitch: settings.disableStitch ?? false,
        brandContentToggle: settings.brandContentToggle ?? false,
        brandOrganicToggle: settings.brandOrganicToggle ?? false,
        isAiGenerated: settings.isAiGenerated ?? false,
      };
    case 'sandbox':
      return { ...settings, outcome: settings.outcome ?? 'published' };
  }
}

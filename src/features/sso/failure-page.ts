// The page a failed single sign-on shows, in the person's language (pt/en/es): what happened and a
// link back to the portal. No script and no inline style, so the portal's CSP holds.
import type { Lang } from '../../app/config.js';
import { escapeHtml, pageStart } from '../../platform/html.js';
import type { FailureReason } from './failure.js';

interface Words {
  title: string;
  back: string;
  reasons: Record<FailureReason, string>;
}

export const FAILURE_TEXT: Record<Lang, Words> = {
  en: {
    title: 'Sign-in failed',
    back: 'Back to Remessa',
    reasons: {
      unreachable: 'The identity provider is not answering. Try again in a few minutes.',
      untrusted: 'The identity provider’s answer could not be verified, so you were not signed in.',
      rejected: 'This sign-in answer is not valid. Start the sign-in again.',
      expired: 'This sign-in has expired or was already used. Start the sign-in again.',
      denied: 'The identity provider did not sign you in.',
      'other-browser': 'This sign-in was started in another browser. Start it again here.',
      'no-name': 'The identity provider did not send a user name for you.',
      'bad-name': 'The user name the identity provider sent cannot be used in Remessa.',
      'no-account': 'You do not have a Remessa account. Ask your administrator for one.',
      'name-taken': 'Your user name belongs to another person’s account. Ask your administrator.',
      disabled: 'Your Remessa account is disabled.',
    },
  },
  pt: {
    title: 'Não foi possível entrar',
    back: 'Voltar ao Remessa',
    reasons: {
      unreachable: 'O provedor de identidade não está respondendo. Tente de novo em alguns minutos.',
      untrusted: 'A resposta do provedor de identidade não pôde ser verificada; você não entrou.',
      rejected: 'Esta resposta de login não é válida. Comece o login de novo.',
      expired: 'Este login expirou ou já foi usado. Comece o login de novo.',
      denied: 'O provedor de identidade não autorizou a sua entrada.',
      'other-browser': 'Este login foi iniciado em outro navegador. Comece de novo aqui.',
      'no-name': 'O provedor de identidade não enviou um nome de usuário para você.',
      'bad-name': 'O nome de usuário enviado pelo provedor de identidade não pode ser usado no Remessa.',
      'no-account': 'Você não tem uma conta no Remessa. Peça uma ao administrador.',
      'name-taken': 'O seu nome de usuário pertence à conta de outra pessoa. Fale com o administrador.',
      disabled: 'A sua conta no Remessa está desativada.',
    },
  },
  es: {
    title: 'No se pudo iniciar sesión',
    back: 'Volver a Remessa',
    reasons: {
      unreachable: 'El proveedor de identidad no responde. Inténtelo de nuevo en unos minutos.',
      untrusted: 'No se pudo verificar la respuesta del proveedor de identidad; no ha iniciado sesión.',
      rejected: 'Esta respuesta de inicio de sesión no es válida. Vuelva a empezar.',
      expired: 'Este inicio de sesión ha caducado o ya se usó. Vuelva a empezar.',
      denied: 'El proveedor de identidad no le ha permitido iniciar sesión.',
      'other-browser': 'Este inicio de sesión se empezó en otro navegador. Empiece de nuevo aquí.',
      'no-name': 'El proveedor de identidad no envió un nombre de usuario para usted.',
      'bad-name': 'El nombre de usuario que envió el proveedor de identidad no se puede usar en Remessa.',
      'no-account': 'No tiene una cuenta en Remessa. Pida una a su administrador.',
      'name-taken':
        'Su nombre de usuario pertenece a la cuenta de otra persona. Consulte a su administrador.',
      disabled: 'Su cuenta de Remessa está desactivada.',
    },
  },
};

export function failurePage(reason: FailureReason, lang: Lang, backTo: string): string {
  const words = FAILURE_TEXT[lang];
  return `${pageStart(lang)}<title>${escapeHtml(words.title)} · Remessa</title>
<link rel="icon" href="data:,">
</head>
<body data-page="sso-failed">
<main>
<h1>${escapeHtml(words.title)}</h1>
<p id="sso-reason">${escapeHtml(words.reasons[reason])}</p>
<p><a href="${escapeHtml(backTo)}">${escapeHtml(words.back)}</a></p>
</main>
</body>
</html>
`;
}

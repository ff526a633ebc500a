// Every string the portal shows, in pt, en and es. `t(key, vars)` fills {placeholders}.
// The English table defines the keys; the others must have exactly the same ones (type-checked).

export type Lang = 'pt' | 'en' | 'es';
export const LANGS: readonly Lang[] = ['pt', 'en', 'es'];
export const LANG_NAMES: Record<Lang, string> = { pt: 'Português', en: 'English', es: 'Español' };
export const LOCALES: Record<Lang, string> = { pt: 'pt-BR', en: 'en', es: 'es' };

const en = {
  language: 'Language',
  navLabel: 'Main',
  navSend: 'Send',
  navReceived: 'My files',
  navBackup: 'Backup',
  signOut: 'Sign out',
  signedInAs: 'Signed in as {user}',
  loading: 'Loading…',
  notFound: 'Page not found.',

  signInTitle: 'Sign in',
  username: 'Username',
  password: 'Password',
  signIn: 'Sign in',
  forgotPassword: 'Forgot password?',
  firstAccess: 'First access? Activate your account',
  badCredentials:
    'Wrong username or password. After too many failed attempts an account is locked for a while: try again later, or use “Forgot password?”.',
  signedOut: 'You have signed out.',
  idleSignedOut: 'You were signed out after {minutes} minutes without activity.',
  sessionExpired: 'Your session has expired. Please sign in again.',

  sendTitle: 'Send files',
  files: 'Files',
  dropHint: 'Drag and drop files here, or choose them below.',
  chosenFiles: '{count} file(s) chosen',
  destination: 'Destination user',
  destinationHint: 'Optional. The files go to this user’s area instead of yours.',
  emails: 'E-mail recipients',
  emailsHint: 'Optional. Separate several addresses with commas. Each one receives a secure link.',
  mobiles: 'Mobile recipients',
  mobilesHint: 'Optional. International format such as +5511999998888, separated by commas.',
  message: 'Message',
  messageHint: 'Optional. Sent with the link (up to 1000 characters).',
  send: 'Send',
  noFiles: 'Choose at least one file to send.',
  uploads: 'Uploads',
  progressOf: 'Upload of {name}',
  waiting: 'Waiting',
  progress: '{percent}% · {speed}',
  sent: 'Sent',
  cancelled: 'Cancelled',
  cancel: 'Cancel',
  cancelFile: 'Cancel {name}',
  linkFor: 'Link for {name}',
  copyLink: 'Copy link',
  copied: 'Link copied.',
  copyFailed: 'Could not copy: select the link and copy it by hand.',

  receivedTitle: 'Files in your area',
  backupTitle: 'Backup',
  backupIntro: 'Files whose link has ended stay here for a while before they are deleted.',
  name: 'Name',
  size: 'Size',
  date: 'Date',
  actions: 'Actions',
  download: 'Download',
  downloadName: 'Download {name}',
  noFilesHere: 'No files here.',
  previousPage: 'Previous page',
  nextPage: 'Next page',
  pageN: 'Page {page}',
  paging: 'Pages',
  recipientsOf: 'Who was told about {name}',
  channelEmail: 'e-mail',
  channelSms: 'SMS',
  deliveryPending: 'Waiting to be sent',
  deliverySent: 'Sent',
  deliveryFailed: 'Not sent: {reason}',
  downloadedTimes: 'Downloaded ({count}×, last {date})',
  downloadStarted: 'Download started, not finished',
  notDownloaded: 'Not downloaded yet',
  resend: 'Resend',
  resendTo: 'Resend to {address}',
  resent: 'The message to {address} is on its way again.',

  landingTitle: 'Download a file',
  file: 'File',
  from: 'From',
  expires: 'Available until',
  secureIntro:
    'This link is protected. Press “Send code” to receive a 6-digit code at the e-mail or mobile the link was sent to, then type it below.',
  unknownIntro: 'If this link is protected, press “Send code” and type the code you receive.',
  sendCode: 'Send code',
  code: 'Code',
  codeSent: 'Code sent. It is valid for a few minutes.',
  codeNeeded: 'Type the code you received first.',
  wrongCode:
    'Wrong or expired code. Check it, or request a new one. After five wrong codes the link is locked for 15 minutes.',
  codeTooSoon: 'A code was sent less than a minute ago. Wait a moment before asking again.',
  linkInvalid: 'This link is invalid, has expired or was revoked. Ask the sender for a new one.',
  downloadStarting: 'Your download is starting.',

  forgotTitle: 'Forgot password',
  forgotIntro: 'Type your username. We will e-mail you a code and a link to choose a new password.',
  firstAccessTitle: 'First access',
  firstAccessIntro: 'Type your username. We will e-mail you a code and a link to choose your password.',
  sendLink: 'Send me a link',
  linkSentByMail: 'Done: we e-mailed you a code. Open the link in that e-mail, or continue here.',
  continueToChange: 'Continue: enter the code',
  unknownUser: 'We could not find an active account with this username.',
  cannotRecover:
    'This account cannot recover its password here (it is disabled or has no e-mail on record). Contact your administrator.',
  notFirstAccess: 'This account is already active. Use “Forgot password?” instead.',
  backToSignIn: 'Back to sign in',

  changeTitle: 'Choose a new password',
  changeIntro:
    'We e-mail you a code: press “Send code” if you have none or it expired. Then type the code and your new password.',
  newPassword: 'New password',
  confirmPassword: 'Confirm password',
  passwordRule: 'At least 8 characters.',
  changePassword: 'Change password',
  passwordsDiffer: 'The two passwords are different.',
  weakPassword: 'The server refused this password: it is too weak or too short. Use at least 8 characters.',
  changeTokenInvalid:
    'This link is invalid, has expired or was already used. Request a new one with “Forgot password?”.',
  changeWrongCode:
    'The code is wrong or has expired. Request a new one if needed; after five wrong codes this link stops working.',
  tooManyCodes: 'Too many codes were requested. Wait a minute and try again.',
  codeSentByMail: 'A new code was sent to your e-mail.',
  passwordChanged: 'Your password was changed. You can sign in now.',
  goToSignIn: 'Go to sign in',

  errNetwork: 'Could not reach the server. Check your connection and try again.',
  errBadRequestNoDetail: 'The server refused the request: check the fields.',
  errEmails: 'Check the e-mail addresses: "{value}" is not a valid one.',
  errEmailsServer: 'The server refused an e-mail address: check them.',
  errMobiles:
    'Check the mobile numbers: "{value}" is not a valid one (international format such as +5511999998888).',
  errMobilesServer: 'The server refused a mobile number: check them.',
  errDestination: 'There is no user "{value}" who can receive files.',
  errDestinationServer: 'That destination user does not exist or cannot receive files.',
  errUploadKept: 'Nothing was sent; your files are still chosen. Correct the fields and send again.',
  errUnauthorized: 'Not authorised. Sign in again.',
  errForbidden: 'This is not allowed.',
  errNotFound: 'Not available on this server yet.',
  errTooLarge: 'The file is larger than this server accepts.',
  errTooMany: 'Too many requests. Wait a minute and try again.',
  errServer: 'The server had a problem. Try again later.',
  errOther: 'Unexpected error (HTTP {status}).',
};

export type MessageKey = keyof typeof en;
type Table = Record<MessageKey, string>;

const pt: Table = {
  language: 'Idioma',
  navLabel: 'Principal',
  navSend: 'Enviar',
  navReceived: 'Meus arquivos',
  navBackup: 'Backup',
  signOut: 'Sair',
  signedInAs: 'Conectado como {user}',
  loading: 'Carregando…',
  notFound: 'Página não encontrada.',

  signInTitle: 'Entrar',
  username: 'Usuário',
  password: 'Senha',
  signIn: 'Entrar',
  forgotPassword: 'Esqueceu a senha?',
  firstAccess: 'Primeiro acesso? Ative sua conta',
  badCredentials:
    'Usuário ou senha incorretos. Depois de muitas tentativas sem sucesso, a conta fica bloqueada por algum tempo: tente mais tarde ou use “Esqueceu a senha?”.',
  signedOut: 'Você saiu.',
  idleSignedOut: 'Você foi desconectado após {minutes} minutos sem atividade.',
  sessionExpired: 'Sua sessão expirou. Entre novamente.',

  sendTitle: 'Enviar arquivos',
  files: 'Arquivos',
  dropHint: 'Arraste e solte arquivos aqui, ou escolha-os abaixo.',
  chosenFiles: '{count} arquivo(s) escolhido(s)',
  destination: 'Usuário de destino',
  destinationHint: 'Opcional. Os arquivos vão para a área deste usuário em vez da sua.',
  emails: 'Destinatários por e-mail',
  emailsHint: 'Opcional. Separe vários endereços por vírgulas. Cada um recebe um link seguro.',
  mobiles: 'Destinatários por celular',
  mobilesHint: 'Opcional. Formato internacional, como +5511999998888, separados por vírgulas.',
  message: 'Mensagem',
  messageHint: 'Opcional. Enviada com o link (até 1000 caracteres).',
  send: 'Enviar',
  noFiles: 'Escolha ao menos um arquivo para enviar.',
  uploads: 'Envios',
  progressOf: 'Envio de {name}',
  waiting: 'Aguardando',
  progress: '{percent}% · {speed}',
  sent: 'Enviado',
  cancelled: 'Cancelado',
  cancel: 'Cancelar',
  cancelFile: 'Cancelar {name}',
  linkFor: 'Link de {name}',
  copyLink: 'Copiar link',
  copied: 'Link copiado.',
  copyFailed: 'Não foi possível copiar: selecione o link e copie manualmente.',

  receivedTitle: 'Arquivos na sua área',
  backupTitle: 'Backup',
  backupIntro: 'Arquivos cujo link terminou ficam aqui por um tempo antes de serem apagados.',
  name: 'Nome',
  size: 'Tamanho',
  date: 'Data',
  actions: 'Ações',
  download: 'Baixar',
  downloadName: 'Baixar {name}',
  noFilesHere: 'Nenhum arquivo aqui.',
  previousPage: 'Página anterior',
  nextPage: 'Próxima página',
  pageN: 'Página {page}',
  paging: 'Páginas',
  recipientsOf: 'Quem foi avisado de {name}',
  channelEmail: 'e-mail',
  channelSms: 'SMS',
  deliveryPending: 'Aguardando envio',
  deliverySent: 'Enviado',
  deliveryFailed: 'Não enviado: {reason}',
  downloadedTimes: 'Baixado ({count}×, último em {date})',
  downloadStarted: 'Download iniciado, não concluído',
  notDownloaded: 'Ainda não baixado',
  resend: 'Reenviar',
  resendTo: 'Reenviar para {address}',
  resent: 'A mensagem para {address} está sendo enviada de novo.',

  landingTitle: 'Baixar um arquivo',
  file: 'Arquivo',
  from: 'De',
  expires: 'Disponível até',
  secureIntro:
    'Este link é protegido. Toque em “Enviar código” para receber um código de 6 dígitos no e-mail ou celular para o qual o link foi enviado e digite-o abaixo.',
  unknownIntro: 'Se este link for protegido, toque em “Enviar código” e digite o código recebido.',
  sendCode: 'Enviar código',
  code: 'Código',
  codeSent: 'Código enviado. Ele vale por alguns minutos.',
  codeNeeded: 'Digite primeiro o código recebido.',
  wrongCode:
    'Código incorreto ou expirado. Confira ou peça outro. Após cinco códigos incorretos o link fica bloqueado por 15 minutos.',
  codeTooSoon: 'Um código foi enviado há menos de um minuto. Aguarde um pouco antes de pedir outro.',
  linkInvalid: 'Este link é inválido, expirou ou foi revogado. Peça um novo ao remetente.',
  downloadStarting: 'Seu download está começando.',

  forgotTitle: 'Esqueci a senha',
  forgotIntro: 'Digite seu usuário. Enviaremos por e-mail um código e um link para escolher uma nova senha.',
  firstAccessTitle: 'Primeiro acesso',
  firstAccessIntro: 'Digite seu usuário. Enviaremos por e-mail um código e um link para escolher sua senha.',
  sendLink: 'Enviar link',
  linkSentByMail: 'Pronto: enviamos um código por e-mail. Abra o link do e-mail ou continue aqui.',
  continueToChange: 'Continuar: digitar o código',
  unknownUser: 'Não encontramos uma conta ativa com este usuário.',
  cannotRecover:
    'Esta conta não pode recuperar a senha aqui (está desativada ou não tem e-mail cadastrado). Fale com o administrador.',
  notFirstAccess: 'Esta conta já está ativa. Use “Esqueceu a senha?”.',
  backToSignIn: 'Voltar para entrar',

  changeTitle: 'Escolha uma nova senha',
  changeIntro:
    'Enviamos um código por e-mail: toque em “Enviar código” se não tiver um ou se ele expirou. Depois digite o código e a nova senha.',
  newPassword: 'Nova senha',
  confirmPassword: 'Confirmar senha',
  passwordRule: 'Pelo menos 8 caracteres.',
  changePassword: 'Alterar senha',
  passwordsDiffer: 'As duas senhas são diferentes.',
  weakPassword: 'O servidor recusou esta senha: é fraca ou curta demais. Use pelo menos 8 caracteres.',
  changeTokenInvalid: 'Este link é inválido, expirou ou já foi usado. Peça outro em “Esqueceu a senha?”.',
  changeWrongCode:
    'O código está incorreto ou expirou. Peça outro se precisar; após cinco códigos incorretos este link deixa de funcionar.',
  tooManyCodes: 'Foram pedidos códigos demais. Aguarde um minuto e tente de novo.',
  codeSentByMail: 'Um novo código foi enviado para seu e-mail.',
  passwordChanged: 'Sua senha foi alterada. Você já pode entrar.',
  goToSignIn: 'Ir para entrar',

  errNetwork: 'Não foi possível falar com o servidor. Verifique sua conexão e tente de novo.',
  errBadRequestNoDetail: 'O servidor recusou o pedido: confira os campos.',
  errEmails: 'Confira os endereços de e-mail: "{value}" não é válido.',
  errEmailsServer: 'O servidor recusou um endereço de e-mail: confira-os.',
  errMobiles: 'Confira os celulares: "{value}" não é válido (formato internacional, como +5511999998888).',
  errMobilesServer: 'O servidor recusou um número de celular: confira-os.',
  errDestination: 'Não há usuário "{value}" que possa receber arquivos.',
  errDestinationServer: 'Esse usuário de destino não existe ou não pode receber arquivos.',
  errUploadKept: 'Nada foi enviado; seus arquivos continuam escolhidos. Corrija os campos e envie de novo.',
  errUnauthorized: 'Não autorizado. Entre novamente.',
  errForbidden: 'Isto não é permitido.',
  errNotFound: 'Ainda não disponível neste servidor.',
  errTooLarge: 'O arquivo é maior do que este servidor aceita.',
  errTooMany: 'Pedidos demais. Aguarde um minuto e tente de novo.',
  errServer: 'O servidor teve um problema. Tente mais tarde.',
  errOther: 'Erro inesperado (HTTP {status}).',
};

const es: Table = {
  language: 'Idioma',
  navLabel: 'Principal',
  navSend: 'Enviar',
  navReceived: 'Mis archivos',
  navBackup: 'Respaldo',
  signOut: 'Cerrar sesión',
  signedInAs: 'Sesión iniciada como {user}',
  loading: 'Cargando…',
  notFound: 'Página no encontrada.',

  signInTitle: 'Iniciar sesión',
  username: 'Usuario',
  password: 'Contraseña',
  signIn: 'Iniciar sesión',
  forgotPassword: '¿Olvidó su contraseña?',
  firstAccess: '¿Primer acceso? Active su cuenta',
  badCredentials:
    'Usuario o contraseña incorrectos. Tras demasiados intentos fallidos, la cuenta queda bloqueada por un tiempo: inténtelo más tarde o use “¿Olvidó su contraseña?”.',
  signedOut: 'Ha cerrado la sesión.',
  idleSignedOut: 'Se cerró su sesión tras {minutes} minutos sin actividad.',
  sessionExpired: 'Su sesión ha caducado. Inicie sesión de nuevo.',

  sendTitle: 'Enviar archivos',
  files: 'Archivos',
  dropHint: 'Arrastre y suelte archivos aquí, o elíjalos abajo.',
  chosenFiles: '{count} archivo(s) elegido(s)',
  destination: 'Usuario de destino',
  destinationHint: 'Opcional. Los archivos van al área de este usuario en lugar de la suya.',
  emails: 'Destinatarios por correo',
  emailsHint: 'Opcional. Separe varias direcciones con comas. Cada una recibe un enlace seguro.',
  mobiles: 'Destinatarios por móvil',
  mobilesHint: 'Opcional. Formato internacional, como +5511999998888, separados por comas.',
  message: 'Mensaje',
  messageHint: 'Opcional. Se envía con el enlace (hasta 1000 caracteres).',
  send: 'Enviar',
  noFiles: 'Elija al menos un archivo para enviar.',
  uploads: 'Envíos',
  progressOf: 'Envío de {name}',
  waiting: 'En espera',
  progress: '{percent}% · {speed}',
  sent: 'Enviado',
  cancelled: 'Cancelado',
  cancel: 'Cancelar',
  cancelFile: 'Cancelar {name}',
  linkFor: 'Enlace de {name}',
  copyLink: 'Copiar enlace',
  copied: 'Enlace copiado.',
  copyFailed: 'No se pudo copiar: seleccione el enlace y cópielo a mano.',

  receivedTitle: 'Archivos en su área',
  backupTitle: 'Respaldo',
  backupIntro: 'Los archivos cuyo enlace terminó quedan aquí un tiempo antes de borrarse.',
  name: 'Nombre',
  size: 'Tamaño',
  date: 'Fecha',
  actions: 'Acciones',
  download: 'Descargar',
  downloadName: 'Descargar {name}',
  noFilesHere: 'No hay archivos aquí.',
  previousPage: 'Página anterior',
  nextPage: 'Página siguiente',
  pageN: 'Página {page}',
  paging: 'Páginas',
  recipientsOf: 'A quién se avisó de {name}',
  channelEmail: 'correo',
  channelSms: 'SMS',
  deliveryPending: 'Esperando envío',
  deliverySent: 'Enviado',
  deliveryFailed: 'No enviado: {reason}',
  downloadedTimes: 'Descargado ({count}×, último el {date})',
  downloadStarted: 'Descarga iniciada, no terminada',
  notDownloaded: 'Aún no descargado',
  resend: 'Reenviar',
  resendTo: 'Reenviar a {address}',
  resent: 'El mensaje a {address} se está enviando de nuevo.',

  landingTitle: 'Descargar un archivo',
  file: 'Archivo',
  from: 'De',
  expires: 'Disponible hasta',
  secureIntro:
    'Este enlace está protegido. Pulse “Enviar código” para recibir un código de 6 dígitos en el correo o móvil al que se envió el enlace y escríbalo abajo.',
  unknownIntro: 'Si este enlace está protegido, pulse “Enviar código” y escriba el código recibido.',
  sendCode: 'Enviar código',
  code: 'Código',
  codeSent: 'Código enviado. Es válido por unos minutos.',
  codeNeeded: 'Escriba primero el código recibido.',
  wrongCode:
    'Código incorrecto o caducado. Revíselo o pida otro. Tras cinco códigos incorrectos el enlace se bloquea 15 minutos.',
  codeTooSoon: 'Se envió un código hace menos de un minuto. Espere un momento antes de pedir otro.',
  linkInvalid: 'Este enlace no es válido, caducó o fue revocado. Pida uno nuevo al remitente.',
  downloadStarting: 'Su descarga está comenzando.',

  forgotTitle: 'Olvidé mi contraseña',
  forgotIntro:
    'Escriba su usuario. Le enviaremos por correo un código y un enlace para elegir una nueva contraseña.',
  firstAccessTitle: 'Primer acceso',
  firstAccessIntro:
    'Escriba su usuario. Le enviaremos por correo un código y un enlace para elegir su contraseña.',
  sendLink: 'Enviarme un enlace',
  linkSentByMail: 'Listo: le enviamos un código por correo. Abra el enlace del correo o continúe aquí.',
  continueToChange: 'Continuar: escribir el código',
  unknownUser: 'No encontramos una cuenta activa con este usuario.',
  cannotRecover:
    'Esta cuenta no puede recuperar la contraseña aquí (está desactivada o no tiene correo registrado). Contacte al administrador.',
  notFirstAccess: 'Esta cuenta ya está activa. Use “¿Olvidó su contraseña?”.',
  backToSignIn: 'Volver a iniciar sesión',

  changeTitle: 'Elija una nueva contraseña',
  changeIntro:
    'Le enviamos un código por correo: pulse “Enviar código” si no tiene uno o si caducó. Luego escriba el código y la nueva contraseña.',
  newPassword: 'Nueva contraseña',
  confirmPassword: 'Confirmar contraseña',
  passwordRule: 'Al menos 8 caracteres.',
  changePassword: 'Cambiar contraseña',
  passwordsDiffer: 'Las dos contraseñas son distintas.',
  weakPassword: 'El servidor rechazó esta contraseña: es débil o demasiado corta. Use al menos 8 caracteres.',
  changeTokenInvalid:
    'Este enlace no es válido, caducó o ya se usó. Pida uno nuevo con “¿Olvidó su contraseña?”.',
  changeWrongCode:
    'El código es incorrecto o caducó. Pida otro si hace falta; tras cinco códigos incorrectos este enlace deja de funcionar.',
  tooManyCodes: 'Se pidieron demasiados códigos. Espere un minuto e inténtelo de nuevo.',
  codeSentByMail: 'Se envió un nuevo código a su correo.',
  passwordChanged: 'Su contraseña se cambió. Ya puede iniciar sesión.',
  goToSignIn: 'Ir a iniciar sesión',

  errNetwork: 'No se pudo contactar con el servidor. Revise su conexión e inténtelo de nuevo.',
  errBadRequestNoDetail: 'El servidor rechazó la solicitud: revise los campos.',
  errEmails: 'Revise las direcciones de correo: "{value}" no es válida.',
  errEmailsServer: 'El servidor rechazó una dirección de correo: revíselas.',
  errMobiles: 'Revise los móviles: "{value}" no es válido (formato internacional, como +5511999998888).',
  errMobilesServer: 'El servidor rechazó un número de móvil: revíselos.',
  errDestination: 'No hay ningún usuario "{value}" que pueda recibir archivos.',
  errDestinationServer: 'Ese usuario de destino no existe o no puede recibir archivos.',
  errUploadKept: 'No se envió nada; sus archivos siguen elegidos. Corrija los campos y envíe de nuevo.',
  errUnauthorized: 'No autorizado. Inicie sesión de nuevo.',
  errForbidden: 'Esto no está permitido.',
  errNotFound: 'Todavía no disponible en este servidor.',
  errTooLarge: 'El archivo es más grande de lo que acepta este servidor.',
  errTooMany: 'Demasiadas solicitudes. Espere un minuto e inténtelo de nuevo.',
  errServer: 'El servidor tuvo un problema. Inténtelo más tarde.',
  errOther: 'Error inesperado (HTTP {status}).',
};

const TABLES: Record<Lang, Table> = { pt, en, es };

let current: Lang = 'en';

export function isLang(v: unknown): v is Lang {
  return typeof v === 'string' && (LANGS as readonly string[]).includes(v);
}

export function currentLang(): Lang {
  return current;
}

export function setLang(lang: Lang): void {
  current = lang;
  document.documentElement.lang = LOCALES[lang];
}

export function t(key: MessageKey, vars: Record<string, string | number> = {}): string {
  return TABLES[current][key].replace(/\{(\w+)\}/g, (m, name: string) =>
    name in vars ? String(vars[name]) : m,
  );
}

/** First supported language among the browser's preferences, or null. */
export function browserLang(): Lang | null {
  for (const tag of navigator.languages ?? [navigator.language]) {
    const base = tag.toLowerCase().split('-')[0];
    if (isLang(base)) return base;
  }
  return null;
}

# bash completion for deviceid(1)
_deviceid() {
    local cur prev words cword
    _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
    local commands="get reset secret vendor advertising openudid uuid mac mac-md5 hash machine-id product-uuid hardware-id attest assert tpm-pin doctor version help"
    local options="--backend --protection --timeout --store-dir --interactive --json --interface --bundle --uppercase --compact --nonce --ak-certificate --client-data-hash --allow-empty --help --version"
    case $prev in
        --backend) COMPREPLY=($(compgen -W "auto secret-service file" -- "$cur")); return ;;
        --protection) COMPREPLY=($(compgen -W "portable this-device-only this-device-only+pcr7" -- "$cur")); return ;;
        --store-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --interface) COMPREPLY=($(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur")); return ;;
        --ak-certificate) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --timeout|--bundle|--nonce|--client-data-hash) return ;;
    esac
    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$options" -- "$cur")); return; fi
    local command="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --backend|--protection|--timeout|--store-dir|--interface|--bundle|--nonce|--ak-certificate|--client-data-hash) ((i++)) ;;
            -*) ;;
            *) command=${words[i]}; break ;;
        esac
    done
    case $command in
        "") COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
        secret) ((cword == i + 1)) && COMPREPLY=($(compgen -W "store lookup delete" -- "$cur")) ;;
        vendor) ((cword == i + 1)) && COMPREPLY=($(compgen -W "get reset" -- "$cur")) ;;
        advertising) ((cword == i + 1)) && COMPREPLY=($(compgen -W "get reset limit" -- "$cur"))
                     [[ ${words[i+1]} == limit ]] && ((cword == i + 2)) && COMPREPLY=($(compgen -W "on off" -- "$cur")) ;;
        openudid) ((cword == i + 1)) && COMPREPLY=($(compgen -W "get opt-out reset" -- "$cur"))
                  [[ ${words[i+1]} == opt-out ]] && ((cword == i + 3)) && COMPREPLY=($(compgen -W "on off" -- "$cur")) ;;
        hash) ((cword == i + 1)) && COMPREPLY=($(compgen -W "md5 sha256" -- "$cur")) ;;
        machine-id) ((cword == i + 1)) && COMPREPLY=($(compgen -W "app-specific raw" -- "$cur")) ;;
        product-uuid) ((cword == i + 1)) && COMPREPLY=($(compgen -W "raw" -- "$cur")) ;;
        attest) ((cword == i + 1)) && COMPREPLY=($(compgen -W "enrol activate certify webauthn" -- "$cur"))
                [[ ${words[i+1]} == activate ]] && ((cword == i + 2)) && COMPREPLY=($(compgen -f -- "$cur")) ;;
        tpm-pin) ((cword == i + 1)) && COMPREPLY=($(compgen -W "forget" -- "$cur")) ;;
        help) ((cword == i + 1)) && COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
    esac
}
complete -F _deviceid deviceid
